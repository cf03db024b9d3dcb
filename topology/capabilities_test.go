package topology_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/ops"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
	"github.com/sensorstorm/sensorstorm/topology"
)

// counting wraps an operation and counts what it processes, forwarding
// only Process: a window inside it would never close.
type counting struct {
	inner operation.Operation
	n     int
}

func (c *counting) Process(ctx context.Context, in particle.Particle, out operation.Emitter) error {
	c.n++
	return c.inner.Process(ctx, in, out)
}

func (c *counting) Unwrap() operation.Operation { return c.inner }

// countingWindow forwards what a window needs as well.
type countingWindow struct {
	counting
}

func (c *countingWindow) OnWatermark(ctx context.Context, wm int64, out operation.Emitter) error {
	return c.inner.(operation.WatermarkHandler).OnWatermark(ctx, wm, out)
}

func (c *countingWindow) OutputHold(wm int64) int64 {
	return c.inner.(operation.OutputHolder).OutputHold(wm)
}

func (c *countingWindow) Flush(ctx context.Context, out operation.Emitter) error {
	return c.inner.(operation.Flusher).Flush(ctx, out)
}

func (c *countingWindow) Snapshot(w *state.Writer) error {
	return c.inner.(operation.Snapshotter).Snapshot(w)
}

func (c *countingWindow) Restore(r *state.Reader) error {
	return c.inner.(operation.Snapshotter).Restore(r)
}

func (c *countingWindow) Span() time.Duration { return c.inner.(operation.Spanner).Span() }

// A wrapper that hides an optional interface of the operation it wraps is
// refused before anything runs; one that forwards them all runs as the
// operation would.
func TestWrappedOperationKeepsItsCapabilities(t *testing.T) {
	window := func() operation.Operation {
		op, err := ops.NewStats(ops.StatsConfig{Count: 10, Aggregates: []string{"count"}})
		require.NoError(t, err)
		return op
	}
	run := func(wrap func(operation.Operation) operation.Operation) ([]particle.Particle, error) {
		topo := newTopology(t, topology.Config{})
		topo.AddSource("src", topology.Single(generate(100, 1)), topology.SourceConfig{})
		topo.AddBolt("window", func() operation.Operation { return wrap(window()) }, topology.BoltConfig{}).Input("src", topology.Global())
		rec := &recorder{}
		topo.AddBolt("sink", rec.factory(), topology.BoltConfig{}).Input("window", topology.Global())
		err := topo.Run(context.Background())
		return rec.all(), err
	}

	_, err := run(func(op operation.Operation) operation.Operation { return &counting{inner: op} })
	require.Error(t, err)
	assert.ErrorContains(t, err, "bolt window")
	assert.ErrorContains(t, err, "operation.WatermarkHandler")

	want, err := run(func(op operation.Operation) operation.Operation { return op })
	require.NoError(t, err)
	got, err := run(func(op operation.Operation) operation.Operation { return &countingWindow{counting{inner: op}} })
	require.NoError(t, err)
	assert.Len(t, got, 10)
	assert.Equal(t, want, got)
}
