package operation_test

import (
	"context"
	"fmt"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// readings counts the readings of each node and emits the count with
// each reading: state kept between particles, which it snapshots.
type readings struct{ n map[string]uint64 }

// readingsStateVersion is the version of the form Snapshot writes.
const readingsStateVersion = 1

func (c *readings) Process(_ context.Context, in particle.Particle, out operation.Emitter) error {
	node, _ := in.Tag("node")
	c.n[node]++
	out.Emit(particle.Particle{Time: in.Time, Measurement: "readings", Tags: []particle.Tag{{Key: "node", Value: node}},
		Fields: []particle.Field{{Key: "n", Value: particle.Uint(c.n[node])}}})
	return nil
}

// Snapshot writes a version, then the counts in the order of the nodes.
func (c *readings) Snapshot(w *state.Writer) error {
	w.PutUvarint(readingsStateVersion)
	state.PutMap(w, c.n, w.PutUvarint)
	return nil
}

// Restore refuses a snapshot of another version and reads the counts.
func (c *readings) Restore(r *state.Reader) error {
	operation.CheckVersion(r, "readings", readingsStateVersion)
	state.ReadMap(r, &c.n, func(string) uint64 { return r.ReadUvarint() })
	return r.Err()
}

// An operation that keeps state snapshotted and restored into a new one
// goes on where the first stopped.
func ExampleSnapshotter() {
	ctx := context.Background()
	reading := func(t int64, node string) particle.Particle {
		return particle.Particle{Time: t * 1e9, Measurement: "room", Tags: []particle.Tag{{Key: "node", Value: node}}}
	}
	op := &readings{n: map[string]uint64{}}
	_ = op.Process(ctx, reading(1, "a"), &operation.Collector{})
	_ = op.Process(ctx, reading(2, "b"), &operation.Collector{})
	_ = op.Process(ctx, reading(3, "a"), &operation.Collector{})

	var w state.Writer
	if err := op.Snapshot(&w); err != nil {
		fmt.Println(err)
		return
	}
	restored := &readings{}
	if err := restored.Restore(state.NewReader(w.Bytes())); err != nil {
		fmt.Println(err)
		return
	}
	out := &operation.Collector{}
	_ = restored.Process(ctx, reading(4, "a"), out)
	_ = restored.Process(ctx, reading(5, "b"), out)
	for _, p := range out.Emitted {
		line, _ := particle.AppendLineProtocol(nil, &p, particle.Second)
		fmt.Print(string(line))
	}

	// A snapshot of another version is refused.
	w.Reset()
	w.PutUvarint(readingsStateVersion + 1)
	fmt.Println(restored.Restore(state.NewReader(w.Bytes())))
	// Output:
	// readings,node=a n=3u 4
	// readings,node=b n=2u 5
	// state: at offset 1: operation: snapshot of another configuration: readings state version 2, not 1
}
