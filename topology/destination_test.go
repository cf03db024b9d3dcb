package topology_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
)

var errDiskFull = fmt.Errorf("%w: write out.lp: no space left on device", operation.ErrDestination)

// flakySink fails the particles that fail says with err (errDiskFull when
// nil), and records the others.
type flakySink struct {
	fail     func(p particle.Particle) bool
	err      error
	mu       sync.Mutex
	got      []particle.Particle
	failures atomic.Int64
}

func (s *flakySink) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	if s.fail(in) {
		s.failures.Add(1)
		if s.err != nil {
			return s.err
		}
		return errDiskFull
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, in)
	return nil
}

func (s *flakySink) all() []particle.Particle {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]particle.Particle(nil), s.got...)
}

// destinationRig returns a replay topology with acking on a fake wall
// clock advanced in steps of step until the test ends, fed by a tracked
// source of n particles, whose destinations are retried by dest.
func destinationRig(t *testing.T, n int, step time.Duration, dest topology.DestinationConfig) (*trackedSource, *connectortest.DeadLetters, *topology.Topology) {
	wall := streamclock.NewFake(time.Unix(1000, 0))
	t.Cleanup(advance(wall, step))
	src := newTrackedSource(n)
	dead := &connectortest.DeadLetters{}
	cfg := ackingConfig(wall, dead)
	cfg.Replay = true
	cfg.Acking.HardTimeout = time.Hour
	cfg.Destination = dest
	topo := newTopology(t, cfg)
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
	return src, dead, topo
}

// A window result that its sink fails to write, a few times, is written
// once the destination recovers: retried where it failed, not replayed
// from the source and never dead-lettered. The source sees no loss.
func TestFailingDestinationIsRetriedWhereItFailed(t *testing.T) {
	const n = 30
	src, dead, topo := destinationRig(t, n, 20*time.Millisecond,
		topology.DestinationConfig{InitialInterval: 10 * time.Millisecond, MaxInterval: 50 * time.Millisecond})
	count := func() operation.Operation { return operation.Aggregate(operation.Tumbling(10), nil, sumAgg{}) }
	topo.AddBolt("window", count, topology.BoltConfig{}).Input("src", topology.Global())
	var left atomic.Int64
	left.Store(4)
	sink := &flakySink{fail: func(p particle.Particle) bool { return p.Time == 20 && left.Add(-1) >= 0 }}
	topo.AddBolt("sink", operation.Stateless(sink), topology.BoltConfig{}).Input("window", topology.Global())
	require.NoError(t, topo.Run(context.Background()))

	src.assertEachEndedOnce(t)
	assert.Len(t, src.acked, n, "every message acknowledged")
	assert.Empty(t, src.failed)
	assert.Empty(t, dead.All())
	var times []int64
	for _, p := range sink.all() {
		times = append(times, p.Time)
	}
	assert.Equal(t, []int64{10, 20, 30, 40}, times, "every window once, the failed one included")
	assert.Equal(t, int64(4), sink.failures.Load())
	assert.Equal(t, uint64(4), topo.Stats("sink").DestinationRetries.Load())
	assert.Zero(t, topo.Stats("src").Retried.Load())
}

// A destination that keeps failing stops the run with ErrGaveUp once the
// give-up time has passed: nothing is dead-lettered, and what was not
// written is neither acknowledged nor failed, for the next run to replay.
func TestDestinationGivenUpOnStopsTheRun(t *testing.T) {
	const n = 20
	src, dead, topo := destinationRig(t, n, 50*time.Millisecond,
		topology.DestinationConfig{InitialInterval: 10 * time.Millisecond, MaxInterval: 100 * time.Millisecond, GiveUpAfter: 2 * time.Second})
	sink := &flakySink{fail: func(p particle.Particle) bool { return p.Time >= 5 }}
	topo.AddBolt("sink", operation.Stateless(sink), topology.BoltConfig{}).Input("src", topology.Global())
	err := topo.Run(context.Background())
	require.ErrorIs(t, err, topology.ErrGaveUp)
	require.ErrorIs(t, err, operation.ErrDestination)
	assert.False(t, errors.Is(err, context.Canceled), "the abort is said once: %v", err)

	assert.Empty(t, dead.All(), "valid data is never dead-lettered for its destination")
	src.mu.Lock()
	defer src.mu.Unlock()
	assert.Empty(t, src.failed, "nor failed")
	assert.Len(t, src.acked, 4, "what was written is acknowledged, nothing else")
	for i := uint64(1); i <= 4; i++ {
		assert.Equal(t, 1, src.acked[i])
	}
	assert.Len(t, sink.all(), 4)
}

// A destination that refuses for good (operation.ErrRefused) stops the run
// at its first refusal, with its error: no retry, nothing dead-lettered,
// nothing failed, and what it refused is not acknowledged.
func TestDestinationRefusedStopsTheRunAtOnce(t *testing.T) {
	const n = 20
	src, dead, topo := destinationRig(t, n, 50*time.Millisecond,
		topology.DestinationConfig{InitialInterval: 10 * time.Millisecond, GiveUpAfter: time.Hour})
	refused := fmt.Errorf("%w: no such database", operation.ErrRefused)
	sink := &flakySink{fail: func(p particle.Particle) bool { return p.Time >= 5 }, err: refused}
	topo.AddBolt("sink", operation.Stateless(sink), topology.BoltConfig{}).Input("src", topology.Global())
	err := topo.Run(context.Background())
	require.ErrorIs(t, err, topology.ErrGaveUp)
	require.ErrorIs(t, err, operation.ErrRefused)
	assert.ErrorContains(t, err, "no such database")
	assert.Zero(t, topo.Stats("sink").DestinationRetries.Load())

	assert.Empty(t, dead.All())
	src.mu.Lock()
	defer src.mu.Unlock()
	assert.Empty(t, src.failed)
	assert.Len(t, src.acked, 4, "what was written is acknowledged, nothing else")
}
