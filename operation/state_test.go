package operation_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/internal/optest"
	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

const recording = "../testdata/library1-r1.lp"

// innerGen returns every stateful operation of these tests (windows,
// typed batches, timers, a counter), configured at random.
func innerGen() *rapid.Generator[optest.OpCase] {
	return rapid.Custom(func(t *rapid.T) optest.OpCase {
		switch rapid.IntRange(0, 5).Draw(t, "kind") {
		case 0, 1:
			return optest.OpCase{Name: "window", New: windowedGen().Draw(t, "window")}
		case 2:
			size := optest.Seconds(1, 10, "size").Draw(t, "size")
			return optest.OpCase{Name: "typed batch", New: func() operation.Operation { return typedSums(size) }}
		case 3:
			after := optest.Seconds(1, 10, "after").Draw(t, "after")
			return optest.OpCase{Name: "timers", New: func() operation.Operation { return newSilence(after) }}
		}
		return optest.OpCase{Name: "counter", New: func() operation.Operation { return &snapCounter{} }}
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

// Every stateful operation, snapshotted at any point of its input and
// restored into a new operation of the same Factory, goes on as if never
// interrupted, and no prefix of its snapshot restores: over generated
// inputs and over the recording.
func TestSnapshots(t *testing.T) {
	optest.CheckSnapshots(t, optest.OrPerKey(innerGen()), recording, recordedOps())
}

// FuzzOperationRestore restores bad bytes into every stateful operation:
// an error, never a panic, and what was restored snapshots again and
// ends its stream without one.
func FuzzOperationRestore(f *testing.F) { optest.FuzzRestore(f, fuzzOps()) }

// recordedOps are the stateful operations of this package's tests as a
// pipeline over the recording would configure them.
func recordedOps() []optest.OpCase {
	return []optest.OpCase{
		{Name: "batch", New: func() operation.Operation {
			return operation.Batch(operation.Tumbling(5*time.Minute), operation.ByTags("node"),
				func(_ context.Context, w operation.Window, key string, batch []particle.Particle, out operation.Emitter) error {
					out.Emit(particle.Particle{Time: w.End, Measurement: "n", Tags: []particle.Tag{{Key: "node", Value: key}},
						Fields: []particle.Field{{Key: "n", Value: particle.Int(int64(len(batch)))}, {Key: "first", Value: particle.Uint(batch[0].Seq)}}})
					return nil
				})
		}},
		{Name: "timers", New: func() operation.Operation { return newSilence(2 * time.Minute) }},
		{Name: "per key windows", New: operation.PerKey(operation.ByTags("node"), func() operation.Operation {
			return operation.Aggregate(operation.Tumbling(30*time.Minute), nil, codedSumAgg{})
		}, 20*time.Minute)},
		{Name: "per key counter", New: operation.PerKey(operation.ByTags("node"), func() operation.Operation { return &snapCounter{} }, 2*time.Minute)},
	}
}

// fuzzOps are the operations FuzzOperationRestore restores into.
func fuzzOps() []optest.OpCase {
	return []optest.OpCase{
		{Name: "per key", New: operation.PerKey(operation.ByTags("node"), func() operation.Operation {
			return operation.Aggregate(operation.Tumbling(time.Second), nil, codedSumAgg{})
		}, 5*time.Second)},
		{Name: "timers", New: func() operation.Operation { return newSilence(2 * time.Second) }},
	}
}

// Restore refuses the snapshot of an operation configured otherwise, whose
// state means something else.
func TestRestoreRefusesAnotherConfiguration(t *testing.T) {
	perKey := func(inner operation.Factory) func() operation.Operation {
		return operation.PerKey(operation.ByTags("node"), inner, 0)
	}
	stateless := operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error { return nil }))
	counter := func() operation.Operation { return &snapCounter{} }
	t.Run("per key, state then none", func(t *testing.T) { optest.RequireMismatch(t, perKey(counter), perKey(stateless)) })
	t.Run("per key, no state then some", func(t *testing.T) { optest.RequireMismatch(t, perKey(stateless), perKey(counter)) })
}
