package operation_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/internal/optest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// A late particle passed through to a window that already closed is
// dropped and acknowledged, not emitted as a second result.
// A particle whose windows have closed (replayed, or late and passed
// through) is rejected, never acknowledged silently.
func TestWindowRejectsParticlesOfClosedWindows(t *testing.T) {
	ctx := context.Background()
	op := operation.Aggregate(operation.Tumbling(10*time.Second), nil, sumAgg{})
	c := &operation.Collector{}
	require.NoError(t, op.Process(ctx, optest.Reading(1, "a", 1), c))
	require.NoError(t, op.OnWatermark(ctx, 12e9, c))
	require.Len(t, c.Emitted, 1)
	err := op.Process(ctx, optest.Reading(2, "a", 1), c)
	require.ErrorIs(t, err, operation.ErrWindowClosed)
	require.ErrorIs(t, err, operation.ErrRejected)
	require.NoError(t, op.Flush(ctx, c))
	assert.Len(t, c.Emitted, 1)
	assert.Len(t, c.Acked, 1)
}

func TestBatchGivesParticlesInOrder(t *testing.T) {
	var got [][]float64
	op := operation.Batch(operation.Tumbling(5*time.Second), operation.ByTags("node"),
		func(_ context.Context, w operation.Window, key string, batch []particle.Particle, out operation.Emitter) error {
			var vs []float64
			for _, p := range batch {
				vs = append(vs, optest.Field(t, p, "v"))
			}
			got = append(got, vs)
			return nil
		})
	optest.Drive(t, op, []particle.Particle{optest.Reading(1, "a", 1), optest.Reading(2, "b", 2), optest.Reading(3, "a", 3), optest.Reading(6, "a", 4)}, 0, 1, 2, 3)
	assert.Equal(t, [][]float64{{1, 3}, {2}, {4}}, got)
	assert.Zero(t, op.Open())
}

// A failing result fails every input of the window it keeps, once.
func TestWindowResultErrorFailsInputs(t *testing.T) {
	for _, mode := range optest.Modes {
		t.Run(mode.Name, func(t *testing.T) {
			op := operation.Batch(operation.Sliding(10*time.Second, 5*time.Second), nil,
				func(context.Context, operation.Window, string, []particle.Particle, operation.Emitter) error {
					return fmt.Errorf("boom")
				})
			c := &operation.Collector{Checkpoints: mode.Checkpoints}
			ctx := context.Background()
			require.NoError(t, op.Process(ctx, optest.Reading(6, "a", 1), c))
			require.NoError(t, op.Process(ctx, optest.Reading(7, "a", 1), c))
			require.Error(t, op.OnWatermark(ctx, 11e9, c))
			// With checkpoints the windows keep the newest input's anchor
			// alone: the other is let go at once.
			failed := 2
			if mode.Checkpoints {
				failed = 1
			}
			assert.Len(t, c.Failed, failed)
			optest.RequireSettledOnce(t, c, 2)
			require.Error(t, op.Flush(ctx, c))
			assert.Len(t, c.Failed, failed)
			optest.RequireSettledOnce(t, c, 2)
		})
	}
}
