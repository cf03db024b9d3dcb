package topology_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
)

// closingSource is a trackedSource that counts the acks it had when it
// was closed.
type closingSource struct {
	*trackedSource
	closes     atomic.Int64
	ackedAtEnd atomic.Int64
	err        error
}

func (s *closingSource) Close() error {
	s.closes.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.acked {
		s.ackedAtEnd.Add(int64(n))
	}
	return s.err
}

// The run owns its sources: one that is an io.Closer is closed once, by
// Run, after the last of its trees was acknowledged, even when its
// instances share it; Run returns the error.
func TestSourcesClosedByTheRun(t *testing.T) {
	src := &closingSource{trackedSource: newTrackedSource(200), err: errors.New("spool: disk full")}
	topo := newTopology(t, ackingConfig(streamclock.System{}, nil))
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{Parallelism: 2})
	topo.AddBolt("sink", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
		return nil
	})), topology.BoltConfig{}).Input("src", topology.Global())

	err := topo.Run(context.Background())
	require.ErrorIs(t, err, src.err)
	assert.ErrorContains(t, err, "source src[0]: close")
	assert.Equal(t, int64(1), src.closes.Load())
	assert.Equal(t, int64(2*200), src.ackedAtEnd.Load(), "closed before every tree was acknowledged")
}
