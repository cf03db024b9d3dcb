package topology_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// stamped returns a factory of operations that pass their input on with
// the tag "up" naming the instance, numbered in the order they are made.
func stamped() operation.Factory {
	var next atomic.Int64
	return func() operation.Operation {
		up := strconv.FormatInt(next.Add(1)-1, 10)
		return operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
			in.Tags = append(append([]particle.Tag(nil), in.Tags...), particle.Tag{Key: "up", Value: up})
			out.Emit(in)
			return nil
		})
	}
}

// keyedPair runs a source, a bolt of par instances keyed on "key", and a
// recorder of par instances taking from it with grouping g.
func keyedPair(t *testing.T, par int, g topology.Grouping) map[int][]particle.Particle {
	t.Helper()
	topo := newTopology(t, topology.Config{BatchSize: 16, Acking: topology.AckingConfig{Enabled: true}})
	topo.AddSource("gen", topology.Single(generate(3000, 13)), topology.SourceConfig{})
	topo.AddBolt("keyed", stamped(), topology.BoltConfig{Parallelism: par}).Input("gen", topology.Fields("key"))
	var rec recorder
	topo.AddBolt("rec", rec.factory(), topology.BoltConfig{Parallelism: par}).Input("keyed", g)
	require.NoError(t, topo.Run(context.Background()))
	return rec.byID
}

func TestForwardFeedsInstanceIFromInstanceIAlone(t *testing.T) {
	const par = 3
	forward := keyedPair(t, par, topology.Forward())
	total := 0
	for id, ps := range forward {
		total += len(ps)
		for _, p := range ps {
			up, _ := p.Tag("up")
			require.Equal(t, strconv.Itoa(id), up, "instance %d got a particle of upstream instance %s", id, up)
		}
	}
	assert.Equal(t, 3000, total)
	// Keyed on the same names with the same parallelism, a fields grouping
	// sends every instance the same particles, in the same order.
	assert.Equal(t, keyedPair(t, par, topology.Fields("key")), forward)
}

func TestForwardRefused(t *testing.T) {
	tests := []struct {
		name  string
		build func(topo *topology.Topology)
		want  string
	}{
		{"parallelism mismatch", func(topo *topology.Topology) {
			topo.AddBolt("a", stamped(), topology.BoltConfig{Parallelism: 2}).Input("gen", topology.Shuffle())
			topo.AddBolt("b", stamped(), topology.BoltConfig{Parallelism: 3}).Input("a", topology.Forward())
		}, "bolt b: forward input from a: parallelism 3, a's 2: a forward edge joins bolts of the same parallelism"},
		{"from a source", func(topo *topology.Topology) {
			topo.AddBolt("a", stamped(), topology.BoltConfig{}).Input("gen", topology.Forward())
		}, "bolt a: forward input from source gen: a forward edge starts at a bolt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo := newTopology(t, topology.Config{})
			topo.AddSource("gen", topology.Single(generate(1, 1)), topology.SourceConfig{})
			tt.build(topo)
			err := topo.Run(context.Background())
			require.ErrorIs(t, err, topology.ErrInvalidTopology)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
