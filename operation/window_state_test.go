package operation_test

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/internal/optest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// sumAgg sums field v; its accumulator has exported fields, and it
// implements state.Codec only when coded is set, so that the two paths of
// Windowed.Snapshot are tested and measured on the same state.
type sumAgg struct{}

type sumAcc struct {
	N             int
	Sum, Min, Max float64
}

func (sumAgg) New() sumAcc { return sumAcc{Min: math.Inf(1), Max: math.Inf(-1)} }

func (sumAgg) Add(acc sumAcc, p *particle.Particle) (sumAcc, error) {
	v, _ := p.Field("v")
	x, _ := v.Number()
	return sumAcc{N: acc.N + 1, Sum: acc.Sum + x, Min: min(acc.Min, x), Max: max(acc.Max, x)}, nil
}

func (sumAgg) Result(_ context.Context, w operation.Window, key string, acc sumAcc, out operation.Emitter) error {
	out.Emit(particle.Particle{Time: w.Start, Measurement: "sum", Tags: []particle.Tag{{Key: "k", Value: key}},
		Fields: []particle.Field{{Key: "n", Value: particle.Int(int64(acc.N))}, {Key: "sum", Value: particle.Float(acc.Sum)},
			{Key: "min", Value: particle.Float(acc.Min)}, {Key: "max", Value: particle.Float(acc.Max)}}})
	return nil
}

type codedSumAgg struct{ sumAgg }

func (codedSumAgg) EncodeState(w *state.Writer, acc sumAcc) error {
	w.PutUvarint(uint64(acc.N))
	w.PutFloat64(acc.Sum)
	w.PutFloat64(acc.Min)
	w.PutFloat64(acc.Max)
	return nil
}

func (codedSumAgg) DecodeState(r *state.Reader) (sumAcc, error) {
	acc := sumAcc{N: int(r.ReadUvarint()), Sum: r.ReadFloat64(), Min: r.ReadFloat64(), Max: r.ReadFloat64()}
	return acc, r.Err()
}

func batcherGen() *rapid.Generator[operation.Batcher] {
	return rapid.Custom(func(t *rapid.T) operation.Batcher {
		size := time.Duration(rapid.IntRange(1, 20).Draw(t, "size")) * time.Second
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			return operation.Tumbling(size)
		case 1:
			return operation.Sliding(size, time.Duration(rapid.IntRange(1, int(size/time.Second)).Draw(t, "slide"))*time.Second)
		case 2:
			return operation.Session(size)
		}
		return operation.Count(rapid.IntRange(1, 10).Draw(t, "count"))
	})
}

// windowedGen returns a factory of window operations of one
// configuration: sums with or without a codec (gob), or batches of
// particles.
func windowedGen() *rapid.Generator[func() operation.Operation] {
	return rapid.Custom(func(t *rapid.T) func() operation.Operation {
		b := batcherGen().Draw(t, "batcher")
		key := operation.ByTags("node")
		switch rapid.IntRange(0, 2).Draw(t, "aggregator") {
		case 2:
			// Every particle of the window, in order.
			return func() operation.Operation {
				return operation.Batch(b, key, func(_ context.Context, _ operation.Window, _ string, batch []particle.Particle, out operation.Emitter) error {
					for _, p := range batch {
						out.Emit(p)
					}
					return nil
				})
			}
		case 1:
			return func() operation.Operation { return operation.Aggregate(b, key, codedSumAgg{}) }
		}
		return func() operation.Operation { return operation.Aggregate(b, key, sumAgg{}) }
	})
}

// step is one particle, perhaps followed by a watermark at its time.
type step struct {
	p  particle.Particle
	wm bool
}

func stepsGen() *rapid.Generator[[]step] {
	return rapid.SliceOf(rapid.Custom(func(t *rapid.T) step {
		s := step{
			p: optest.Reading(float64(rapid.IntRange(0, 600).Draw(t, "time"))/10,
				fmt.Sprint("n", rapid.IntRange(0, 3).Draw(t, "node")), float64(rapid.IntRange(-50, 50).Draw(t, "v"))),
			wm: rapid.IntRange(0, 4).Draw(t, "wm") == 0,
		}
		s.p.Origin, s.p.Seq = rapid.Uint32().Draw(t, "origin"), rapid.Uint64().Draw(t, "seq")
		if rapid.Bool().Draw(t, "more fields") {
			s.p.Fields = append(s.p.Fields,
				particle.Field{Key: "i", Value: particle.Int(rapid.Int64().Draw(t, "i"))},
				particle.Field{Key: "u", Value: particle.Uint(rapid.Uint64().Draw(t, "u"))},
				particle.Field{Key: "s", Value: particle.String(rapid.String().Draw(t, "s"))},
				particle.Field{Key: "b", Value: particle.Bool(rapid.Bool().Draw(t, "b"))})
		}
		return s
	}))
}

// feed runs steps through op, returning whether each particle was
// accepted.
func feed(t optest.TB, op operation.Operation, steps []step, out *operation.Collector) []bool {
	ctx := context.Background()
	var accepted []bool
	for _, s := range steps {
		err := op.Process(ctx, s.p, out)
		accepted = append(accepted, err == nil)
		if s.wm {
			require.NoError(t, op.(operation.WatermarkHandler).OnWatermark(ctx, s.p.Time, out))
		}
	}
	return accepted
}

func TestWindowSnapshotRestoreGivesTheSameResults(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		newOp := windowedGen().Draw(t, "op")
		steps := stepsGen().Draw(t, "steps")
		cut := rapid.IntRange(0, len(steps)).Draw(t, "cut")

		orig := newOp()
		feed(t, orig, steps[:cut], &operation.Collector{})
		var w state.Writer
		require.NoError(t, orig.(operation.Snapshotter).Snapshot(&w))
		restored := newOp()
		r := state.NewReader(w.Bytes())
		require.NoError(t, restored.(operation.Snapshotter).Restore(r))
		require.Zero(t, r.Len(), "bytes left after Restore")

		var want, got operation.Collector
		require.Equal(t, feed(t, orig, steps[cut:], &want), feed(t, restored, steps[cut:], &got))
		ctx := context.Background()
		require.NoError(t, orig.(operation.Flusher).Flush(ctx, &want))
		require.NoError(t, restored.(operation.Flusher).Flush(ctx, &got))
		require.Equal(t, want.Emitted, got.Emitted)
	})
}

func TestWindowRestoreRefusesAnotherConfiguration(t *testing.T) {
	key := operation.ByTags("node")
	src := operation.Aggregate(operation.Tumbling(time.Second), key, sumAgg{})
	feed(t, src, []step{{p: optest.Reading(1, "a", 1)}}, &operation.Collector{})
	var w state.Writer
	require.NoError(t, src.Snapshot(&w))
	for name, dst := range map[string]operation.Snapshotter{
		"another size":   operation.Aggregate(operation.Tumbling(2*time.Second), key, sumAgg{}),
		"another kind":   operation.Aggregate(operation.Session(time.Second), key, sumAgg{}),
		"another codec":  operation.Aggregate(operation.Tumbling(time.Second), key, codedSumAgg{}),
		"sliding window": operation.Aggregate(operation.Sliding(time.Second, time.Second/2), key, sumAgg{}),
	} {
		t.Run(name, func(t *testing.T) {
			err := dst.Restore(state.NewReader(w.Bytes()))
			require.ErrorIs(t, err, operation.ErrStateMismatch)
		})
	}
}

// FuzzWindowRestore restores bad bytes into windows with each kind of
// accumulator encoding: an error of package state, never a panic, and what
// was restored closes without one.
func FuzzWindowRestore(f *testing.F) {
	ops := []func() operation.Operation{
		func() operation.Operation {
			return operation.Aggregate(operation.Tumbling(time.Second), operation.ByTags("node"), codedSumAgg{})
		},
		func() operation.Operation {
			return operation.Batch(operation.Tumbling(time.Second), operation.ByTags("node"),
				func(context.Context, operation.Window, string, []particle.Particle, operation.Emitter) error {
					return nil
				})
		},
		func() operation.Operation {
			return operation.Aggregate(operation.Tumbling(time.Second), operation.ByTags("node"), sumAgg{})
		},
	}
	for _, newOp := range ops {
		op := newOp()
		feed(f, op, []step{{p: optest.Reading(1, "a", 1)}, {p: optest.Reading(1.5, "b", 2)}, {p: optest.Reading(2, "a", 3)}}, &operation.Collector{})
		var w state.Writer
		require.NoError(f, op.(operation.Snapshotter).Snapshot(&w))
		f.Add(w.Bytes())
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for i, newOp := range ops {
			op := newOp()
			err := op.(operation.Snapshotter).Restore(state.NewReader(in))
			var de *state.DecodeError
			if err != nil && !errors.As(err, &de) && i != 2 { // gob's errors are its own
				t.Fatalf("error %v is no DecodeError", err)
			}
			if err == nil {
				_ = op.(operation.Flusher).Flush(context.Background(), &operation.Collector{})
			}
		}
	})
}

// BenchmarkWindowSnapshot measures snapshot and restore of 1M keyed window
// states, the accumulators encoded by a state.Codec or by encoding/gob.
func BenchmarkWindowSnapshot(b *testing.B) {
	const keys = 1_000_000
	for _, enc := range []struct {
		name string
		agg  operation.Aggregator[sumAcc]
	}{{"codec", codedSumAgg{}}, {"gob", sumAgg{}}} {
		newOp := func() *operation.Windowed[sumAcc] {
			return operation.Aggregate(operation.Tumbling(time.Minute), operation.ByTags("node"), enc.agg)
		}
		op := newOp()
		c := &operation.Collector{}
		for i := range keys {
			p := optest.Reading(float64(i%60), fmt.Sprintf("sensor-%07d", i), float64(i))
			if err := op.Process(context.Background(), p, c); err != nil {
				b.Fatal(err)
			}
		}
		var w state.Writer // the snapshot restored
		if err := op.Snapshot(&w); err != nil {
			b.Fatal(err)
		}
		b.Run("encode="+enc.name+"/snapshot", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w.Reset()
				if err := op.Snapshot(&w); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(w.Len()))
			b.ReportMetric(float64(w.Len())/keys, "B/state")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/keys, "ns/state")
		})
		b.Run("encode="+enc.name+"/restore", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(w.Len()))
			for b.Loop() {
				r := newOp()
				if err := r.Restore(state.NewReader(w.Bytes())); err != nil {
					b.Fatal(err)
				}
				if r.Open() != keys {
					b.Fatalf("%d windows restored, want %d", r.Open(), keys)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/keys, "ns/state")
		})
	}
}

// BenchmarkAccumulatorEncoding measures the accumulators alone: 1M of
// them written and read by a state.Codec, and by one gob stream.
func BenchmarkAccumulatorEncoding(b *testing.B) {
	const n = 1_000_000
	accs := make([]sumAcc, n)
	for i := range accs {
		accs[i] = sumAcc{N: i % 100, Sum: float64(i) * 1.5, Min: float64(i), Max: float64(2 * i)}
	}
	var codec codedSumAgg
	var w state.Writer
	b.Run("encode=codec", func(b *testing.B) {
		for b.Loop() {
			w.Reset()
			for _, a := range accs {
				_ = codec.EncodeState(&w, a)
			}
			r := state.NewReader(w.Bytes())
			for range accs {
				if _, err := codec.DecodeState(r); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(w.Len())/n, "B/state")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/state")
	})
	b.Run("encode=gob", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			enc := gob.NewEncoder(&buf)
			for _, a := range accs {
				if err := enc.Encode(a); err != nil {
					b.Fatal(err)
				}
			}
			dec := gob.NewDecoder(bytes.NewReader(buf.Bytes()))
			for range accs {
				var a sumAcc
				if err := dec.Decode(&a); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(buf.Len())/n, "B/state")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/state")
	})
}
