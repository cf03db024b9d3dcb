package operation_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// The round trip of every built-in operation that keeps state: snapshotted
// at any point of its input and restored into a new operation of the same
// Factory, it goes on as if never interrupted.

// inputKind is what an operation is given: a particle, a watermark, a
// stream-clock tick or a meta particle.
type inputKind uint8

const (
	inParticle inputKind = iota
	inWatermark
	inTick
	inMeta
)

// input is one thing an operation is given, as a bolt instance gives it.
type input struct {
	kind inputKind
	p    particle.Particle // a data or meta particle
	t    int64             // a watermark or the stream clock's time
}

// player gives inputs to an operation and records everything it does:
// what it emits, acks and fails, each call's error and, after each
// watermark, its output hold.
type player struct {
	op    operation.Operation
	out   *operation.Collector
	errs  []string
	holds []int64
}

func newPlayer(op operation.Operation, checkpoints bool) *player {
	return &player{op: op, out: &operation.Collector{Checkpoints: checkpoints}}
}

func (pl *player) play(ins []input) {
	ctx := context.Background()
	for _, in := range ins {
		var err error
		switch in.kind {
		case inParticle:
			err = pl.op.Process(ctx, in.p, pl.out)
		case inWatermark:
			if h, ok := pl.op.(operation.WatermarkHandler); ok {
				err = h.OnWatermark(ctx, in.t, pl.out)
			}
			if h, ok := pl.op.(operation.OutputHolder); ok {
				pl.holds = append(pl.holds, h.OutputHold(in.t))
			}
		case inTick:
			if h, ok := pl.op.(operation.TickHandler); ok {
				err = h.OnTick(ctx, in.t, pl.out)
			}
		case inMeta:
			if h, ok := pl.op.(operation.MetaHandler); ok {
				err = h.HandleMeta(ctx, in.p, pl.out)
			}
		}
		pl.record(err)
	}
}

func (pl *player) record(err error) {
	if err != nil {
		pl.errs = append(pl.errs, err.Error())
	} else {
		pl.errs = append(pl.errs, "")
	}
}

// finish ends the stream as the engine does: the last watermark, then
// Flush.
func (pl *player) finish() {
	pl.play([]input{{kind: inWatermark, t: math.MaxInt64}})
	if f, ok := pl.op.(operation.Flusher); ok {
		pl.record(f.Flush(context.Background(), pl.out))
	}
}

// fork returns a player of op that has recorded what pl has.
func (pl *player) fork(op operation.Operation) *player {
	out := *pl.out
	out.Emitted = slices.Clone(out.Emitted)
	out.Acked = slices.Clone(out.Acked)
	out.Failed = maps.Clone(out.Failed)
	return &player{op: op, out: &out, errs: slices.Clone(pl.errs), holds: slices.Clone(pl.holds)}
}

// requireSame requires that pl and o emitted the same particles, returned
// the same errors and held the same output; with settled, that they acked
// and failed the same anchors too.
func (pl *player) requireSame(t tb, o *player, what string, settled bool) {
	t.Helper()
	require.Equal(t, pl.errs, o.errs, "%s: errors", what)
	require.Equal(t, pl.holds, o.holds, "%s: output holds", what)
	require.Equal(t, canon(pl.out.Emitted), canon(o.out.Emitted), "%s: emitted", what)
	if settled {
		require.Equal(t, pl.out.Acked, o.out.Acked, "%s: acked", what)
		require.Equal(t, fmt.Sprint(pl.out.Failed), fmt.Sprint(o.out.Failed), "%s: failed", what)
	}
}

// canon returns ps with no empty tags or fields, which are nil: the
// engine and every sink treat the two alike.
func canon(ps []particle.Particle) []particle.Particle {
	c := make([]particle.Particle, len(ps))
	for i, p := range ps {
		if len(p.Tags) == 0 {
			p.Tags = nil
		}
		if len(p.Fields) == 0 {
			p.Fields = nil
		}
		c[i] = p
	}
	return c
}

// roundTrip requires that an operation of newOp given ins[:cut],
// snapshotted, restored into another and given ins[cut:] does what one
// given ins uninterrupted does, and that the first, snapshotted and given
// ins[cut:] too, does the same, and that none settles an anchor twice.
// With checkpoints, Hold returns checkpointed anchors. It returns the
// snapshot and the number of particles emitted.
func roundTrip(t tb, newOp func() operation.Operation, ins []input, cut int, checkpoints bool) ([]byte, int) {
	t.Helper()
	whole := newPlayer(newOp(), checkpoints)
	whole.play(ins)
	whole.finish()

	orig := newPlayer(newOp(), checkpoints)
	orig.play(ins[:cut])
	var w state.Writer
	require.NoError(t, orig.op.(operation.Snapshotter).Snapshot(&w))
	snap := bytes.Clone(w.Bytes())
	restored := orig.fork(newOp())
	r := state.NewReader(snap)
	require.NoError(t, restored.op.(operation.Snapshotter).Restore(r))
	require.Zero(t, r.Len(), "bytes left after Restore")
	w.Reset()
	require.NoError(t, restored.op.(operation.Snapshotter).Snapshot(&w))
	require.Equal(t, snap, w.Bytes(), "the restored operation's snapshot differs")

	orig.play(ins[cut:])
	orig.finish()
	restored.play(ins[cut:])
	restored.finish()
	whole.requireSame(t, orig, "snapshotted", true)
	// Without checkpoints the inputs held before the cut are not in the
	// snapshot; with them, the anchors an operation keeps for its
	// results' identities are, and it lets go of them as before.
	whole.requireSame(t, restored, "restored", checkpoints)
	for _, pl := range []*player{whole, orig, restored} {
		settled := map[operation.Anchor]bool{}
		for _, a := range pl.out.Acked {
			require.False(t, settled[a], "anchor %x settled twice", a)
			settled[a] = true
		}
		for a := range pl.out.Failed {
			require.False(t, settled[a], "anchor %x settled twice", a)
			settled[a] = true
		}
	}
	return snap, len(whole.out.Emitted)
}

// requirePrefixesFail requires that Restore of every prefix of snap fails,
// without a panic: of every one for a small snapshot, of about 2000 spread
// over it and its last 64 for a large one.
func requirePrefixesFail(t tb, newOp func() operation.Operation, snap []byte) {
	t.Helper()
	step := max(1, len(snap)/2000)
	for i := 0; i < len(snap); i++ {
		if i%step != 0 && i < len(snap)-64 {
			continue
		}
		err := newOp().(operation.Snapshotter).Restore(state.NewReader(snap[:i]))
		require.Error(t, err, "Restore of the first %d of %d bytes", i, len(snap))
	}
}

// nodes are the sensors of generated inputs.
var nodes = []string{"n0", "n1", "n2", "n3"}

// inputsGen returns inputs in roughly event-time order, as a bolt
// instance releases them: readings of four nodes, each with a sequence
// number (some without v, some with a string field), now and then a
// repeated packet or a reading a little late; watermarks behind the
// latest reading; stream-clock ticks; and stream-time ticks as meta
// particles.
func inputsGen() *rapid.Generator[[]input] {
	return rapid.Custom(func(t *rapid.T) []input {
		n := rapid.IntRange(0, 80).Draw(t, "n")
		var (
			ins               []input
			sent              []particle.Particle
			clock, stream, wm int64
			seq               = map[string]int64{}
		)
		for range n {
			switch rapid.IntRange(0, 11).Draw(t, "input") {
			case 0, 1:
				wm = max(wm, clock-int64(rapid.IntRange(0, 4).Draw(t, "wm lag"))*5e8)
				ins = append(ins, input{kind: inWatermark, t: wm})
			case 2:
				stream += int64(rapid.IntRange(0, 6).Draw(t, "tick")) * 5e8
				ins = append(ins, input{kind: inTick, t: stream})
			case 3:
				ins = append(ins, input{kind: inMeta, p: metaparticle.New(clock, metaparticle.Tick{Domain: metaparticle.StreamTime})})
			case 4:
				if len(sent) > 0 {
					p := sent[rapid.IntRange(0, len(sent)-1).Draw(t, "repeat")]
					if rapid.Bool().Draw(t, "later copy") {
						p.Time = clock
					}
					ins = append(ins, input{kind: inParticle, p: p})
				}
			default:
				clock += int64(rapid.IntRange(0, 6).Draw(t, "dt")) * 25e7
				node := rapid.SampledFrom(nodes).Draw(t, "node")
				seq[node]++
				p := particle.Particle{
					Time:        clock - int64(rapid.IntRange(0, 1).Draw(t, "late"))*int64(rapid.IntRange(0, 8).Draw(t, "lateness"))*25e7,
					Measurement: "m", Tags: []particle.Tag{{Key: "node", Value: node}},
					Fields: []particle.Field{{Key: "seq", Value: particle.Int(seq[node])}},
					Origin: 1, Seq: uint64(len(sent) + 1),
				}
				if rapid.IntRange(0, 7).Draw(t, "no v") > 0 {
					p.Fields = append(p.Fields, particle.Field{Key: "v", Value: particle.Float(float64(rapid.IntRange(-20, 20).Draw(t, "v")))})
				}
				if rapid.IntRange(0, 7).Draw(t, "string") == 0 {
					p.Fields = append(p.Fields, particle.Field{Key: "s", Value: particle.String(rapid.StringN(0, 3, 3).Draw(t, "s"))})
				}
				sent = append(sent, p)
				ins = append(ins, input{kind: inParticle, p: p})
			}
		}
		return ins
	})
}

// opCase is a Factory of one configuration of an operation.
type opCase struct {
	name  string
	newOp func() operation.Operation
}

func secondsGen(lo, hi int, label string) *rapid.Generator[time.Duration] {
	return rapid.Custom(func(t *rapid.T) time.Duration {
		return time.Duration(rapid.IntRange(lo, hi).Draw(t, label)) * time.Second / 2
	})
}

// statefulGen returns every built-in stateful operation, configured at
// random, and per-key managers of them.
func statefulGen() *rapid.Generator[opCase] {
	return rapid.Custom(func(t *rapid.T) opCase {
		if rapid.IntRange(0, 3).Draw(t, "per key") == 0 {
			inner := innerGen().Draw(t, "inner")
			ttl := rapid.SampledFrom([]time.Duration{0, 2 * time.Second, 10 * time.Second}).Draw(t, "ttl")
			return opCase{"per key " + inner.name, operation.PerKey(operation.ByTags("node"), inner.newOp, ttl)}
		}
		return innerGen().Draw(t, "op")
	})
}

func innerGen() *rapid.Generator[opCase] {
	by := func(t *rapid.T, label string) []string {
		return rapid.SampledFrom([][]string{nil, {"node"}}).Draw(t, label)
	}
	return rapid.Custom(func(t *rapid.T) opCase {
		switch rapid.IntRange(0, 9).Draw(t, "kind") {
		case 0, 1:
			return opCase{"window", windowedGen().Draw(t, "window")}
		case 2:
			cfg := operation.AlignConfig{Bucket: secondsGen(1, 10, "bucket").Draw(t, "bucket"), Sensor: []string{"node"}}
			return opCase{"align", func() operation.Operation { return must(operation.NewAlign(cfg)) }}
		case 3:
			size := secondsGen(1, 10, "size").Draw(t, "size")
			return opCase{"typed batch", func() operation.Operation { return typedSums(size) }}
		case 4:
			cfg := operation.DedupConfig{By: rapid.SampledFrom([][]string{nil, {"node", "seq"}}).Draw(t, "by"), Within: secondsGen(0, 20, "within").Draw(t, "within")}
			return opCase{"dedup", func() operation.Operation { return must(operation.NewDedup(cfg)) }}
		case 5:
			cfg := operation.ResampleConfig{
				Every:  secondsGen(1, 6, "every").Draw(t, "every"),
				Method: rapid.SampledFrom([]string{operation.ResampleLast, operation.ResampleLinear}).Draw(t, "method"),
				By:     by(t, "by"), MaxGap: secondsGen(0, 8, "max gap").Draw(t, "max gap"),
				Fields: rapid.SampledFrom([][]string{nil, {"v"}}).Draw(t, "fields"),
			}
			return opCase{"resample", func() operation.Operation { return must(operation.NewResample(cfg)) }}
		case 6:
			above := float64(rapid.IntRange(-5, 15).Draw(t, "above"))
			cfg := operation.ThresholdConfig{Field: "v", Above: &above, By: by(t, "by")}
			if rapid.Bool().Draw(t, "below") {
				cfg.Below = ptr(above - float64(rapid.IntRange(1, 20).Draw(t, "below")))
			}
			return opCase{"threshold", func() operation.Operation { return must(operation.NewThreshold(cfg)) }}
		case 7:
			cfg := operation.RateConfig{Field: "v", Max: float64(rapid.IntRange(1, 40).Draw(t, "max")), By: by(t, "by")}
			return opCase{"rate of change", func() operation.Operation { return must(operation.NewRateOfChange(cfg)) }}
		case 8:
			after := secondsGen(1, 10, "after").Draw(t, "after")
			return opCase{"timers", func() operation.Operation { return newSilence(after) }}
		}
		return opCase{"counter", func() operation.Operation { return &snapCounter{} }}
	})
}

// typedReading is what typedSums decodes, with exported fields for gob.
type typedReading struct {
	Node string
	V    float64
}

// typedSums is a TypedBatch summing v per node, whose accumulators gob
// snapshots.
func typedSums(size time.Duration) operation.Operation {
	return operation.TypedBatch(operation.Tumbling(size), operation.ByTags("node"),
		func(p particle.Particle) (typedReading, error) {
			node, _ := p.Tag("node")
			v, ok := p.Field("v")
			if !ok {
				return typedReading{}, errors.New("no v")
			}
			return typedReading{Node: node, V: v.FloatValue()}, nil
		},
		func(r typedReading) particle.Particle {
			return particle.Particle{Measurement: "sum", Tags: []particle.Tag{{Key: "node", Value: r.Node}},
				Fields: []particle.Field{{Key: "v", Value: particle.Float(r.V)}}}
		},
		func(_ context.Context, _ operation.Window, key string, batch []typedReading, emit func(typedReading)) error {
			sum := typedReading{Node: key}
			for _, r := range batch {
				sum.V += r.V
			}
			emit(sum)
			return nil
		})
}

// snapCounter is a per-key counter that declares its state.
type snapCounter struct{ counter }

func (c *snapCounter) Snapshot(w *state.Writer) error {
	w.PutUvarint(uint64(c.n))
	w.PutVarint(c.last)
	w.PutString(c.key)
	return nil
}

func (c *snapCounter) Restore(r *state.Reader) error {
	c.n, c.last, c.key = int(r.ReadUvarint()), r.ReadVarint(), r.ReadString()
	return r.Err()
}

// Snapshot writes silence's timers, one per node.
func (s *silence) Snapshot(w *state.Writer) error {
	return s.timers.Snapshot(w, func(w *state.Writer, node string) error {
		w.PutString(node)
		return nil
	})
}

// Restore reads what Snapshot wrote; a node is due when its timer is.
func (s *silence) Restore(r *state.Reader) error {
	return s.timers.Restore(r, func(r *state.Reader, _ metaparticle.Domain, at int64) (string, error) {
		node := r.ReadString()
		s.due[node] = at
		return node, r.Err()
	})
}

var _ operation.Snapshotter = (*silence)(nil)

func TestSnapshotRestoreGivesTheSameOutput(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		op := statefulGen().Draw(t, "op")
		ins := inputsGen().Draw(t, "inputs")
		cut := rapid.IntRange(0, len(ins)).Draw(t, "cut")
		roundTrip(t, op.newOp, ins, cut, rapid.Bool().Draw(t, "checkpoints"))
	})
}

func TestSnapshotPrefixesFail(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		op := statefulGen().Draw(t, "op")
		ins := inputsGen().Draw(t, "inputs")
		pl := newPlayer(op.newOp(), true)
		pl.play(ins)
		var w state.Writer
		require.NoError(t, pl.op.(operation.Snapshotter).Snapshot(&w))
		requirePrefixesFail(t, op.newOp, w.Bytes())
	})
}

// recordedInputs returns the recording as a bolt instance would get it:
// every 50 readings a watermark 5 s behind the latest and a tick of the
// stream clock, which runs with event time; every 500 a stream-time tick
// as a meta particle.
func recordedInputs(t *testing.T) []input {
	var ins []input
	latest := int64(math.MinInt64)
	for i, p := range readRecording(t) {
		ins = append(ins, input{kind: inParticle, p: p})
		latest = max(latest, p.Time)
		if i%50 == 49 {
			ins = append(ins, input{kind: inWatermark, t: latest - 5e9}, input{kind: inTick, t: latest})
		}
		if i%500 == 499 {
			ins = append(ins, input{kind: inMeta, p: metaparticle.New(latest, metaparticle.Tick{Domain: metaparticle.StreamTime})})
		}
	}
	return ins
}

// recordedOps are the built-in stateful operations as a pipeline over the
// recording would configure them.
func recordedOps() []opCase {
	byNode := []string{"node"}
	stats := func(cfg operation.StatsConfig) func() operation.Operation {
		return func() operation.Operation { return must(operation.NewStats(cfg)) }
	}
	return []opCase{
		{"sliding statistics", stats(operation.StatsConfig{Size: 10 * time.Minute, Slide: 5 * time.Minute, By: byNode,
			Fields: []string{"temperature", "humidity"}, Aggregates: []string{"mean", "min", "max", "count", "stddev", "p95"}})},
		{"session statistics", stats(operation.StatsConfig{Gap: time.Minute, By: byNode, Fields: []string{"temperature"}, Aggregates: []string{"mean", "count"}})},
		{"count statistics", stats(operation.StatsConfig{Count: 25, By: byNode, Fields: []string{"par"}, Aggregates: []string{"sum"}})},
		{"batch", func() operation.Operation {
			return operation.Batch(operation.Tumbling(5*time.Minute), operation.ByTags("node"),
				func(_ context.Context, w operation.Window, key string, batch []particle.Particle, out operation.Emitter) error {
					out.Emit(particle.Particle{Time: w.End, Measurement: "n", Tags: []particle.Tag{{Key: "node", Value: key}},
						Fields: []particle.Field{{Key: "n", Value: particle.Int(int64(len(batch)))}, {Key: "first", Value: particle.Uint(batch[0].Seq)}}})
					return nil
				})
		}},
		{"align", func() operation.Operation {
			return must(operation.NewAlign(operation.AlignConfig{Bucket: 10 * time.Minute, Sensor: byNode, Fields: []string{"temperature"}}))
		}},
		{"dedup", func() operation.Operation {
			return must(operation.NewDedup(operation.DedupConfig{By: []string{"node", "seq"}, Within: 10 * time.Minute}))
		}},
		{"resample", func() operation.Operation {
			return must(operation.NewResample(operation.ResampleConfig{Every: time.Minute, Method: operation.ResampleLinear, By: byNode,
				Fields: []string{"temperature", "humidity"}, MaxGap: 5 * time.Minute}))
		}},
		{"threshold", func() operation.Operation {
			return must(operation.NewThreshold(operation.ThresholdConfig{Field: "temperature", Above: ptr(22.5), Below: ptr(21), By: byNode}))
		}},
		{"rate of change", func() operation.Operation {
			return must(operation.NewRateOfChange(operation.RateConfig{Field: "humidity", Max: 0.002, By: byNode}))
		}},
		{"timers", func() operation.Operation { return newSilence(2 * time.Minute) }},
		{"per key statistics", operation.PerKey(operation.ByTags("node"),
			stats(operation.StatsConfig{Size: 30 * time.Minute, Fields: []string{"temperature"}, Aggregates: []string{"mean"}}), 20*time.Minute)},
		{"per key counter", operation.PerKey(operation.ByTags("node"), func() operation.Operation { return &snapCounter{} }, 2*time.Minute)},
	}
}

// Every stateful operation over the recording, snapshotted at a few points
// and restored, gives the output of the uninterrupted run; every prefix of
// its snapshot in the middle of the recording fails to restore.
func TestSnapshotRestoreOverRecording(t *testing.T) {
	ins := recordedInputs(t)
	cuts := []int{1, len(ins) / 3, len(ins) / 2, len(ins) - 1}
	for _, op := range recordedOps() {
		t.Run(op.name, func(t *testing.T) {
			for i, cut := range cuts {
				snap, emitted := roundTrip(t, op.newOp, ins, cut, i%2 == 1)
				require.NotZero(t, emitted)
				if cut == len(ins)/2 {
					requirePrefixesFail(t, op.newOp, snap)
					t.Logf("snapshot in the middle: %d bytes; %d particles emitted", len(snap), emitted)
				}
			}
		})
	}
}

// FuzzOperationRestore restores bad bytes into every stateful operation:
// an error, never a panic, and what was restored snapshots again and
// ends its stream without one.
func FuzzOperationRestore(f *testing.F) {
	ops := fuzzOps()
	for _, op := range ops {
		f.Add(seedOf(f, op))
	}
	f.Fuzz(func(t *testing.T, in []byte) { fuzzOne(t, ops, in) })
}

// fuzzOps are the operations FuzzOperationRestore restores into.
func fuzzOps() []opCase {
	return []opCase{
		{"per key", operation.PerKey(operation.ByTags("node"), func() operation.Operation {
			return must(operation.NewStats(operation.StatsConfig{Size: time.Second, Aggregates: []string{"mean"}}))
		}, 5*time.Second)},
		{"align", func() operation.Operation {
			return must(operation.NewAlign(operation.AlignConfig{Bucket: time.Second, Sensor: []string{"node"}}))
		}},
		{"dedup", func() operation.Operation {
			return must(operation.NewDedup(operation.DedupConfig{By: []string{"node", "seq"}}))
		}},
		{"resample", func() operation.Operation {
			return must(operation.NewResample(operation.ResampleConfig{Every: time.Second, By: []string{"node"}}))
		}},
		{"threshold", func() operation.Operation {
			return must(operation.NewThreshold(operation.ThresholdConfig{Field: "v", Above: ptr(5), By: []string{"node"}}))
		}},
		{"rate of change", func() operation.Operation {
			return must(operation.NewRateOfChange(operation.RateConfig{Field: "v", Max: 3, By: []string{"node"}}))
		}},
		{"timers", func() operation.Operation { return newSilence(2 * time.Second) }},
	}
}

// seedOf returns the snapshot of op after a few readings.
func seedOf(t tb, op opCase) []byte {
	var ins []input
	for i := range 12 {
		p := reading(float64(i)/2, nodes[i%3], float64(i*i%11))
		p.Fields = append(p.Fields, particle.Field{Key: "seq", Value: particle.Int(int64(i / 2))})
		ins = append(ins, input{kind: inParticle, p: p}, input{kind: inTick, t: p.Time})
	}
	pl := newPlayer(op.newOp(), true)
	pl.play(ins)
	var w state.Writer
	require.NoError(t, pl.op.(operation.Snapshotter).Snapshot(&w))
	return w.Bytes()
}

// fuzzOne restores in into each of ops.
func fuzzOne(t tb, ops []opCase, in []byte) {
	for _, op := range ops {
		pl := newPlayer(op.newOp(), true)
		err := pl.op.(operation.Snapshotter).Restore(state.NewReader(in))
		if err != nil {
			var de *state.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%s: error %v is no DecodeError", op.name, err)
			}
			continue
		}
		var w state.Writer
		if err := pl.op.(operation.Snapshotter).Snapshot(&w); err != nil {
			t.Fatalf("%s: snapshot of a restored state: %v", op.name, err)
		}
		pl.play([]input{{kind: inTick, t: math.MaxInt64}})
		pl.finish()
	}
}

// Restore refuses the snapshot of an operation configured otherwise, whose
// state means something else.
func TestRestoreRefusesAnotherConfiguration(t *testing.T) {
	dedup := func(by ...string) func() operation.Operation {
		return func() operation.Operation { return must(operation.NewDedup(operation.DedupConfig{By: by})) }
	}
	resample := func(every time.Duration, by ...string) func() operation.Operation {
		return func() operation.Operation {
			return must(operation.NewResample(operation.ResampleConfig{Every: every, By: by}))
		}
	}
	threshold := func(field string, by ...string) func() operation.Operation {
		return func() operation.Operation {
			return must(operation.NewThreshold(operation.ThresholdConfig{Field: field, Above: ptr(1), By: by}))
		}
	}
	perKey := func(inner operation.Factory) func() operation.Operation {
		return operation.PerKey(operation.ByTags("node"), inner, 0)
	}
	stateless := operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error { return nil }))
	for _, tc := range []struct {
		name     string
		from, to func() operation.Operation
	}{
		{"dedup by other names", dedup("node", "seq"), dedup("node")},
		{"resample at another interval", resample(time.Second, "node"), resample(2*time.Second, "node")},
		{"resample of other series", resample(time.Second, "node"), resample(time.Second)},
		{"threshold on another field", threshold("v", "node"), threshold("w", "node")},
		{"threshold of other sensors", threshold("v", "node"), threshold("v")},
		{"per key, state then none", perKey(func() operation.Operation { return &snapCounter{} }), perKey(stateless)},
		{"per key, no state then some", perKey(stateless), perKey(func() operation.Operation { return &snapCounter{} })},
		{"a dedup's snapshot into a threshold", dedup(), threshold("v")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := newPlayer(tc.from(), false)
			pl.play([]input{{kind: inParticle, p: reading(1, "a", 3)}})
			var w state.Writer
			require.NoError(t, pl.op.(operation.Snapshotter).Snapshot(&w))
			err := tc.to().(operation.Snapshotter).Restore(state.NewReader(w.Bytes()))
			require.ErrorIs(t, err, operation.ErrStateMismatch)
		})
	}
}
