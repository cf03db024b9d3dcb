package topology_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
)

func TestStreamTimeIsTheRunsClock(t *testing.T) {
	topo, err := topology.New(topology.Config{Clock: streamclock.Func(func() int64 { return 42 })})
	require.NoError(t, err)
	_, ok := topo.StreamTime()
	require.False(t, ok, "before Run")
	var during int64
	topo.AddSource("in", topology.Single(topology.SourceFunc(func(context.Context, topology.SourceEmitter) error {
		during, ok = topo.StreamTime()
		return nil
	})), topology.SourceConfig{})
	topo.AddBolt("out", operation.Stateless(operation.Func(nil)), topology.BoltConfig{}).Input("in", topology.Global())
	require.NoError(t, topo.Run(context.Background()))
	require.True(t, ok)
	require.Equal(t, int64(42), during)
}
