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

// closingSink counts what it processed and when it was closed.
type closingSink struct {
	processed      atomic.Int64
	closes         atomic.Int64
	processedAtEnd atomic.Int64
	err            error
}

func (s *closingSink) Process(context.Context, particle.Particle, operation.Emitter) error {
	s.processed.Add(1)
	return nil
}

func (s *closingSink) Close() error {
	s.closes.Add(1)
	s.processedAtEnd.Store(s.processed.Load())
	return s.err
}

// A sink shared by the instances of a bolt is closed once, after the last
// instance processed its last particle; sinks of their own are closed one
// by one; Run returns their errors.
func TestOperationsClosedOnce(t *testing.T) {
	shared := &closingSink{}
	var own []*closingSink
	broken := &closingSink{err: errors.New("disk full")}
	topo := newTopology(t, topology.Config{})
	topo.AddSource("src", topology.Single(generate(1000, 10)), topology.SourceConfig{})
	topo.AddBolt("shared", operation.Stateless(shared), topology.BoltConfig{Parallelism: 3}).
		Input("src", topology.Fields("key"))
	topo.AddBolt("own", func() operation.Operation {
		s := &closingSink{}
		own = append(own, s)
		return s
	}, topology.BoltConfig{Parallelism: 2}).Input("src", topology.Fields("key"))
	topo.AddBolt("broken", operation.Stateless(broken), topology.BoltConfig{}).Input("src", topology.Global())

	err := topo.Run(context.Background())
	require.ErrorContains(t, err, "disk full")
	assert.ErrorContains(t, err, "broken")

	assert.Equal(t, int64(1), shared.closes.Load())
	assert.Equal(t, int64(1000), shared.processedAtEnd.Load(), "closed before every instance was done")
	require.Len(t, own, 2)
	var total int64
	for _, s := range own {
		assert.Equal(t, int64(1), s.closes.Load())
		total += s.processed.Load()
	}
	assert.Equal(t, int64(1000), total)
	assert.Equal(t, int64(1), broken.closes.Load())
}

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
