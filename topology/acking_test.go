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

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
)

// trackedSource emits n particles with message ids 1..n and records what
// the engine reports about each.
type trackedSource struct {
	n      int
	mu     sync.Mutex
	acked  map[uint64]int
	failed map[uint64]acker.Reason
}

func newTrackedSource(n int) *trackedSource {
	return &trackedSource{n: n, acked: map[uint64]int{}, failed: map[uint64]acker.Reason{}}
}

// reading returns the particle of message id i: the source needs no
// memory to redeliver it.
func (s *trackedSource) reading(i uint64) particle.Particle {
	return particle.Particle{Time: int64(i), Measurement: "m", Tags: []particle.Tag{{Key: "k", Value: string(rune('a' + i%3))}}}
}

func (s *trackedSource) Run(ctx context.Context, out topology.SourceEmitter) error {
	for i := uint64(1); i <= uint64(s.n); i++ {
		if err := out.EmitTracked(s.reading(i), i); err != nil {
			return err
		}
	}
	return nil
}

func (s *trackedSource) Ack(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acked[id]++
}

func (s *trackedSource) Fail(id uint64, r acker.Reason, _ error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed[id] = r
}

func (s *trackedSource) Redeliver(id uint64) (particle.Particle, error) { return s.reading(id), nil }

// ackedCount returns how many message ids were acked.
func (s *trackedSource) ackedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acked)
}

// each message id ended exactly once, acked or failed.
func (s *trackedSource) assertEachEndedOnce(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := uint64(1); i <= uint64(s.n); i++ {
		_, failed := s.failed[i]
		acks := s.acked[i]
		require.True(t, (acks == 1) != failed, "message %d: acked %d times, failed %v", i, acks, failed)
	}
}

// advance drives a fake wall clock in the background until stop is closed,
// so that tickers of a topology under test fire without real sleeps.
func advance(w *streamclock.Fake, step time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
				w.Advance(step)
				time.Sleep(50 * time.Microsecond) // yield to the topology; no assertion depends on it
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

func ackingConfig(w streamclock.Wall, dead topology.DeadLetterSink) topology.Config {
	return topology.Config{
		BatchSize: 8,
		Wall:      w,
		Acking: topology.AckingConfig{
			Enabled: true, MaxPending: 64, MaxAttempts: 3,
			ProgressTimeout: time.Second, HardTimeout: 5 * time.Second,
			RetryInitialInterval: 10 * time.Millisecond, RetryMaxInterval: 50 * time.Millisecond,
		},
		DeadLetters: dead,
	}
}

func TestAckingEveryTreeCompletesThroughBranchesAndFanOut(t *testing.T) {
	src := newTrackedSource(500)
	topo := newTopology(t, ackingConfig(streamclock.System{}, nil))
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
	// Each input branches into three children, one of them to every sink
	// instance: the tree completes only when all are processed.
	topo.AddBolt("branch", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
		for range 3 {
			out.Emit(in)
		}
		return nil
	})), topology.BoltConfig{Parallelism: 2}).Input("src", topology.Fields("k"))
	var sunk atomic.Int64
	topo.AddBolt("sink", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
		sunk.Add(1)
		return nil
	})), topology.BoltConfig{Parallelism: 3}).Input("branch", topology.All())
	require.NoError(t, topo.Run(context.Background()))

	assert.Equal(t, int64(500*3*3), sunk.Load())
	src.assertEachEndedOnce(t)
	assert.Empty(t, src.failed)
	assert.Equal(t, uint64(500), topo.Stats("src").Acked.Load())
}

// batchSource is a trackedSource that is a BatchAcknowledger, and counts
// the acknowledgements that came one at a time.
type batchSource struct {
	*trackedSource
	single atomic.Int64
}

func (s *batchSource) Ack(id uint64) {
	s.single.Add(1)
	s.trackedSource.Ack(id)
}

func (s *batchSource) AckBatch(ids []uint64) {
	for _, id := range ids {
		s.trackedSource.Ack(id)
	}
}

// A BatchAcknowledger's trees are acknowledged through AckBatch, each
// once.
func TestAckingBatchAcknowledger(t *testing.T) {
	src := &batchSource{trackedSource: newTrackedSource(500)}
	topo := newTopology(t, ackingConfig(streamclock.System{}, nil))
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("sink", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
		return nil
	})), topology.BoltConfig{Parallelism: 2}).Input("src", topology.Fields("k"))
	require.NoError(t, topo.Run(context.Background()))

	src.assertEachEndedOnce(t)
	assert.Empty(t, src.failed)
	assert.Zero(t, src.single.Load(), "acknowledgements one at a time")
}

// A window-like operation holds inputs from many roots and emits one
// aggregate anchored to all of them: no root completes before the
// aggregate itself was processed. Large windows index their roots.
func TestAckingAggregateAnchoredAcrossRoots(t *testing.T) {
	for _, size := range []int{10, 100} {
		t.Run(fmt.Sprintf("window=%d", size), func(t *testing.T) {
			src := newTrackedSource(3 * size)
			var sinkSaw atomic.Int64
			var ackedBeforeSink atomic.Int64
			cfg := ackingConfig(streamclock.System{}, nil)
			// A window holds its inputs' trees: max pending must make room.
			cfg.Acking.MaxPending = 2 * size
			topo := newTopology(t, cfg)
			topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
			topo.AddBolt("window", func() operation.Operation {
				var held []operation.Anchor
				return operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
					held = append(held, out.Hold())
					if len(held) == size {
						// The same input anchored twice must not break the XOR.
						out.EmitAnchored(particle.Particle{Time: in.Time, Measurement: "sum"}, append(held, held[0])...)
						// Acked is read before what the sink saw, which only
						// grows: a root acked early shows as an excess.
						src.mu.Lock()
						acked := int64(len(src.acked))
						src.mu.Unlock()
						if acked > sinkSaw.Load()*int64(size) {
							ackedBeforeSink.Add(1)
						}
						for _, a := range held {
							out.Ack(a)
						}
						held = held[:0]
					}
					return nil
				})
			}, topology.BoltConfig{}).Input("src", topology.Global())
			topo.AddBolt("sink", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
				sinkSaw.Add(1)
				return nil
			})), topology.BoltConfig{}).Input("window", topology.Global())
			require.NoError(t, topo.Run(context.Background()))

			assert.Equal(t, int64(3), sinkSaw.Load())
			assert.Zero(t, ackedBeforeSink.Load(), "a root completed before its aggregate was processed")
			src.assertEachEndedOnce(t)
			assert.Empty(t, src.failed)
		})
	}
}

func TestAckingPanicIsRetriedAndThenSucceeds(t *testing.T) {
	src := newTrackedSource(20)
	var panicked atomic.Bool
	var processed sync.Map
	topo := newTopology(t, ackingConfig(streamclock.System{}, nil))
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("flaky", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, _ operation.Emitter) error {
		if in.Time == 7 && panicked.CompareAndSwap(false, true) {
			panic("transient")
		}
		processed.Store(in.Time, true)
		return nil
	})), topology.BoltConfig{}).Input("src", topology.Global())
	require.NoError(t, topo.Run(context.Background()))

	src.assertEachEndedOnce(t)
	assert.Empty(t, src.failed)
	_, ok := processed.Load(int64(7))
	assert.True(t, ok, "the replayed particle was processed")
	stats := topo.Stats("src")
	assert.Equal(t, uint64(1), stats.Retried.Load())
	assert.Equal(t, uint64(1), stats.FailedBy[acker.Panic].Load())
}

// A bolt that keeps particles and never acks them: their trees expire,
// are replayed, and after the last attempt go to the dead-letter sink;
// every other particle completes.
func TestAckingLostParticlesAreReplayedThenDeadLettered(t *testing.T) {
	wall := streamclock.NewFake(time.Unix(1000, 0))
	src := newTrackedSource(40)
	var dead connectortest.DeadLetters
	topo := newTopology(t, ackingConfig(wall, &dead))
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("leaky", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
		if in.Time%10 == 0 {
			out.Hold() // and forget it
		}
		return nil
	})), topology.BoltConfig{}).Input("src", topology.Global())
	ran := make(chan error, 1)
	go func() { ran <- topo.Run(context.Background()) }()
	// The clock stands still until the particles the bolt does not lose
	// were acknowledged: moved meanwhile, on a loaded machine, it timed
	// out and retried some of those too.
	require.Eventually(t, func() bool { return src.ackedCount() == 36 }, 20*time.Second, time.Millisecond)
	stop := advance(wall, 20*time.Millisecond)
	defer stop()
	require.NoError(t, <-ran)

	src.assertEachEndedOnce(t)
	require.Len(t, src.failed, 4)
	for id, r := range src.failed {
		assert.Zero(t, id%10, "message %v", id)
		assert.Contains(t, []acker.Reason{acker.Timeout, acker.Expired}, r)
	}
	stats := topo.Stats("src")
	assert.Equal(t, uint64(4*2), stats.Retried.Load(), "two replays each before giving up")
	assert.Equal(t, uint64(4), stats.DeadLettered.Load())
	require.Len(t, dead.All(), 4)
	for _, d := range dead.All() {
		require.NotNil(t, d.Particle)
		assert.Zero(t, d.Particle.Time%10)
	}
}

// A bolt far slower than its source: trees wait in queues for longer than
// the progress timeout, yet none times out and none is replayed, and the
// pending trees never exceed max pending.
func TestAckingOverloadCausesNoReplayStorm(t *testing.T) {
	for _, hard := range []time.Duration{time.Hour, 2 * time.Second} {
		t.Run(fmt.Sprintf("hard timeout %v", hard), func(t *testing.T) { overload(t, hard) })
	}
}

func overload(t *testing.T, hard time.Duration) {
	wall := streamclock.NewFake(time.Unix(1000, 0))
	// Background time only keeps tickers going; the slow bolt moves it.
	stop := advance(wall, 100*time.Microsecond)
	defer stop()
	src := newTrackedSource(3000)
	cfg := ackingConfig(wall, nil)
	cfg.Acking.MaxPending = 500
	cfg.Acking.ProgressTimeout = time.Second
	cfg.InboxSize = 64
	cfg.Acking.HardTimeout = hard
	topo := newTopology(t, cfg)
	var maxPending atomic.Int64
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("slow", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
		// Each particle takes 10 ms of (fake) wall time: the 500 trees
		// pending wait up to 5 s, five times the progress timeout.
		wall.Advance(10 * time.Millisecond)
		if p := int64(topo.AckStats().Pending); p > maxPending.Load() {
			maxPending.Store(p)
		}
		return nil
	})), topology.BoltConfig{}).Input("src", topology.Global())
	require.NoError(t, topo.Run(context.Background()))

	src.assertEachEndedOnce(t)
	stats := topo.Stats("src")
	assert.Zero(t, stats.Failed.Load(), "timeouts under backpressure")
	assert.Zero(t, stats.Retried.Load())
	assert.Equal(t, uint64(3000), stats.Acked.Load())
	assert.LessOrEqual(t, maxPending.Load(), int64(500))
}

func TestAckingFailedOperationDeadLettersAfterAttempts(t *testing.T) {
	src := newTrackedSource(5)
	var dead connectortest.DeadLetters
	boom := errors.New("cannot store")
	topo := newTopology(t, ackingConfig(streamclock.System{}, &dead))
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
	var calls atomic.Int64
	topo.AddBolt("store", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, _ operation.Emitter) error {
		if in.Time == 3 {
			calls.Add(1)
			return boom
		}
		return nil
	})), topology.BoltConfig{}).Input("src", topology.Global())
	require.NoError(t, topo.Run(context.Background()))

	src.assertEachEndedOnce(t)
	assert.Equal(t, int64(3), calls.Load(), "max attempts")
	require.Equal(t, acker.Failed, src.failed[3])
	require.Len(t, dead.All(), 1)
	assert.ErrorIs(t, dead.All()[0].Err, boom)
}

// concurrentSource emits the particles of a trackedSource from several
// goroutines at once.
type concurrentSource struct {
	*trackedSource
	emitters int
}

func (s concurrentSource) Run(ctx context.Context, out topology.SourceEmitter) error {
	errs := make(chan error, s.emitters)
	var wg sync.WaitGroup
	for e := range s.emitters {
		wg.Go(func() {
			for i := uint64(1 + e); i <= uint64(s.n); i += uint64(s.emitters) {
				if err := out.EmitTracked(s.reading(i), i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// At max pending 1 the one tree pending is a particle that the bolt's sync
// buffer holds until a later one comes: the source, waiting for its token,
// tells the buffer the time of the particle it holds back, which releases
// the one before, so every tree completes in turn rather than time out.
func TestAckingMaxPendingOne(t *testing.T) {
	src := newTrackedSource(200)
	cfg := ackingConfig(streamclock.System{}, nil)
	cfg.Acking.MaxPending = 1
	topo := newTopology(t, cfg)
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("work", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
		return nil
	})), topology.BoltConfig{}).Input("src", topology.Global())
	// Waiting for the trees' timeouts instead would take minutes.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, topo.Run(ctx))

	src.assertEachEndedOnce(t)
	assert.Empty(t, src.failed)
	assert.Equal(t, uint64(200), topo.Stats("src").Acked.Load())
	assert.Zero(t, topo.Stats("src").Retried.Load())
}

// Several goroutines emit into one source instance, which takes pending
// tokens ahead and blocks at the limit: every tree ends once, never more
// than max pending are pending, and a blocked emitter flushes what it
// routed, so none waits for the linger.
func TestAckingConcurrentEmittersAtMaxPending(t *testing.T) {
	for _, maxPending := range []int{2, 8, 100} {
		t.Run(fmt.Sprintf("max pending %d", maxPending), func(t *testing.T) {
			src := concurrentSource{trackedSource: newTrackedSource(2000), emitters: 3}
			cfg := ackingConfig(streamclock.System{}, nil)
			cfg.Acking.MaxPending = maxPending
			topo := newTopology(t, cfg)
			var peak atomic.Int64
			topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
			topo.AddBolt("work", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
				if p := int64(topo.AckStats().Pending); p > peak.Load() {
					peak.Store(p)
				}
				return nil
			})), topology.BoltConfig{}).Input("src", topology.Global())
			require.NoError(t, topo.Run(context.Background()))

			src.assertEachEndedOnce(t)
			assert.Empty(t, src.failed)
			assert.Equal(t, uint64(2000), topo.Stats("src").Acked.Load())
			assert.LessOrEqual(t, peak.Load(), int64(maxPending))
		})
	}
}
