package operation_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/internal/optest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

func TestTyped(t *testing.T) {
	type reading struct {
		Node string
		C    float64
	}
	decode := func(p particle.Particle) (reading, error) {
		node, _ := p.Tag("node")
		v, ok := p.Field("c")
		if !ok {
			return reading{}, os.ErrNotExist
		}
		return reading{Node: node, C: v.FloatValue()}, nil
	}
	encode := func(r reading) particle.Particle {
		return particle.Particle{Measurement: "f", Tags: []particle.Tag{{Key: "node", Value: r.Node}}, Fields: []particle.Field{{Key: "f", Value: particle.Float(r.C*9/5 + 32)}}}
	}
	op := operation.Typed(decode, encode, func(_ context.Context, r reading, emit func(reading)) error {
		emit(r)
		return nil
	})
	c := &operation.Collector{}
	in := particle.Particle{Time: 5, Tags: []particle.Tag{{Key: "node", Value: "1"}}, Fields: []particle.Field{{Key: "c", Value: particle.Float(100)}}}
	require.NoError(t, op.Process(context.Background(), in, c))
	require.Len(t, c.Emitted, 1)
	assert.Equal(t, int64(5), c.Emitted[0].Time)
	assert.Equal(t, 212.0, optest.Field(t, c.Emitted[0], "f"))
	err := op.Process(context.Background(), particle.Particle{}, c)
	assert.ErrorIs(t, err, operation.ErrDecode)
}
