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
// last), then the end of the stream. It checks that every held input was
// settled once.
func drive(t tb, op operation.Operation, in []particle.Particle, rounds ...int) *operation.Collector {
	t.Helper()
	ctx := context.Background()
	c := &operation.Collector{}
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
