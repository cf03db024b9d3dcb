package operation_test

import (
	"context"
	"math"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// tb is what drive needs of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	FailNow()
}

// reading returns a particle of sensor node with field v at t seconds.
func reading(t float64, node string, v float64) particle.Particle {
	return particle.Particle{
		Time: int64(t * 1e9), Measurement: "m",
		Tags:   []particle.Tag{{Key: "node", Value: node}},
		Fields: []particle.Field{{Key: "v", Value: particle.Float(v)}},
	}
}

// drive runs op over in like a bolt instance would, announcing the
// watermark after the particles at the indexes in rounds (and after the
// last), then the end of the stream.
func drive(t tb, op operation.Operation, in []particle.Particle, rounds ...int) *operation.Collector {
	t.Helper()
	return driveWith(t, &operation.Collector{}, op, in, rounds...)
}

// modes are the two ways the engine holds inputs: an anchor per input,
// or operation.Checkpointed when the run takes checkpoints.
var modes = []struct {
	name        string
	checkpoints bool
}{{"acks", false}, {"checkpoints", true}}

// requireSettledOnce requires that each of the n inputs c numbered as it
// held them was acknowledged or failed exactly once, by the operation:
// with checkpoints too, where the engine acknowledges it at a checkpoint
// and the operation's Ack lets go of the anchor.
func requireSettledOnce(t tb, c *operation.Collector, n int) {
	t.Helper()
	seen := map[operation.Anchor]int{}
	for _, a := range c.Acked {
		seen[a&^operation.CheckpointedAnchor]++
	}
	for a := range c.Failed {
		seen[a&^operation.CheckpointedAnchor]++
	}
	for a := operation.Anchor(1); a <= operation.Anchor(n); a++ {
		require.Equal(t, 1, seen[a], "input %d settled %d times", a, seen[a])
	}
	require.Len(t, seen, n, "anchors settled: %v", seen)
}

// driveWith is drive recording into c.
func driveWith(t tb, c *operation.Collector, op operation.Operation, in []particle.Particle, rounds ...int) *operation.Collector {
	t.Helper()
	ctx := context.Background()
	wm, _ := op.(operation.WatermarkHandler)
	next := 0
	for i, p := range in {
		require.NoError(t, op.Process(ctx, p, c))
		if wm != nil && (next < len(rounds) && rounds[next] == i) {
			next++
			require.NoError(t, wm.OnWatermark(ctx, p.Time, c))
		}
	}
	if wm != nil {
		require.NoError(t, wm.OnWatermark(ctx, math.MaxInt64, c))
	}
	if f, ok := op.(operation.Flusher); ok {
		require.NoError(t, f.Flush(ctx, c))
	}
	return c
}

// every returns the indexes 0..n-1: one watermark round per particle.
func every(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i
	}
	return r
}

func field(t tb, p particle.Particle, key string) float64 {
	t.Helper()
	v, ok := p.Field(key)
	require.Truef(t, ok, "field %s missing in %v", key, p)
	x, _ := v.Number()
	return x
}
