package topology_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// A slow bolt slows the source down: what is in flight stays within the
// inboxes and batches, and the heap does not grow with the input.
func TestSlowBoltSlowsTheSourceAndMemoryStaysBounded(t *testing.T) {
	const (
		n         = 200_000
		batchSize = 16
		inboxSize = 2
	)
	var processed, maxInFlight atomic.Int64
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	topo := newTopology(t, topology.Config{BatchSize: batchSize, InboxSize: inboxSize})
	topo.AddSource("fast", topology.Single(topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		payload := make([]particle.Field, 8)
		for i := range payload {
			payload[i] = particle.Field{Key: "f", Value: particle.Float(float64(i))}
		}
		for i := range n {
			if inFlight := int64(i) - processed.Load(); inFlight > maxInFlight.Load() {
				maxInFlight.Store(inFlight)
			}
			if err := out.Emit(particle.Particle{Time: int64(i), Measurement: "m", Fields: payload}); err != nil {
				return err
			}
		}
		return nil
	})), topology.SourceConfig{})
	topo.AddBolt("slow", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
		for range 200 {
			runtime.Gosched() // slow, and lets the source run
		}
		processed.Add(1)
		return nil
	})), topology.BoltConfig{}).Input("fast", topology.Global())
	require.NoError(t, topo.Run(context.Background()))
	runtime.GC()
	runtime.ReadMemStats(&after)

	require.Equal(t, int64(n), processed.Load())
	// Inbox, the batch being processed and the source's pending batch.
	bound := int64((inboxSize + 3) * batchSize)
	assert.LessOrEqual(t, maxInFlight.Load(), bound, "the source ran ahead of the slow bolt")
	growth := int64(after.HeapInuse) - int64(before.HeapInuse)
	assert.Less(t, growth, int64(8<<20), "heap grew by %d bytes", growth)
}
