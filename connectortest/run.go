package connectortest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// buffer is the synchronization buffer of the suite's bolts: no window,
// and a short idle timeout, so that the last readings come out without an
// end of stream; late readings pass, since the suite is about delivery,
// not order (what a restarted source delivers again is older than what
// its bolts released before, once they saw their input idle).
var buffer = syncbuffer.Config{IdleTimeout: 200 * time.Millisecond, Late: syncbuffer.LatePass}

// running is a topology the suite runs in the background.
type running struct {
	topo   *topology.Topology
	cancel context.CancelFunc
	done   chan error
	dead   DeadLetters
}

// start runs a topology with acking on, made by build, until stop.
func start(t testing.TB, build func(*topology.Topology)) *running {
	t.Helper()
	r := &running{done: make(chan error, 1)}
	topo, err := topology.New(topology.Config{
		Logger:      slog.New(slog.DiscardHandler),
		Acking:      topology.AckingConfig{Enabled: true},
		DeadLetters: &r.dead,
	})
	if err != nil {
		t.Fatalf("topology: %v", err)
	}
	build(topo)
	r.topo = topo
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- topo.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends the topology and reports an error it ended with.
func (r *running) stop(t testing.TB) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err != nil && !isCanceled(err) {
		t.Errorf("topology: %v", err)
	}
}

func (r *running) deadLetters() []topology.DeadLetter { return r.dead.All() }

func isCanceled(err error) bool { return errors.Is(err, context.Canceled) }

// WaitFor polls cond every 20 ms until it holds, and fails t naming what
// it waited for if timeout passes first: for tests whose condition is
// outside the process's control (a broker, a child process, a server).
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// seen is a set of reading numbers with their counts, safe for concurrent
// use.
type seen struct {
	mu sync.Mutex
	n  map[int]int
}

func newSeen() *seen { return &seen{n: map[int]int{}} }

func (s *seen) add(n int) {
	s.mu.Lock()
	s.n[n]++
	s.mu.Unlock()
}

// has reports whether every number of [from, to) was seen.
func (s *seen) has(from, to int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := from; n < to; n++ {
		if s.n[n] == 0 {
			return false
		}
	}
	return true
}

// missing returns the numbers of [from, to) not seen, at most ten.
func (s *seen) missing(from, to int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for n := from; n < to && len(out) < 10; n++ {
		if s.n[n] == 0 {
			out = append(out, n)
		}
	}
	return out
}

// collector is a bolt that notes the readings it processes.
type collector struct{ seen *seen }

func (c collector) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	if n, ok := Number(&in); ok {
		c.seen.add(n)
	}
	return nil
}

// recorder is a bolt that writes each reading's line to w, unbuffered,
// before its input is acknowledged: what it acknowledged survives the
// process being killed.
type recorder struct{ w io.Writer }

func (r recorder) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	line, err := particle.AppendLineProtocol(nil, &in, particle.Nanosecond)
	if err != nil {
		return err
	}
	_, err = r.w.Write(line)
	return err
}

// reverser is a bolt that completes trees out of order: it holds every
// input and, on each tick, acknowledges what it holds last first.
type reverser struct {
	seen *seen
	held []operation.Anchor
}

func (r *reverser) Process(_ context.Context, in particle.Particle, out operation.Emitter) error {
	if n, ok := Number(&in); ok {
		r.seen.add(n)
	}
	r.held = append(r.held, out.Hold())
	return nil
}

func (r *reverser) OnTick(_ context.Context, _ int64, out operation.Emitter) error {
	for i := len(r.held) - 1; i >= 0; i-- {
		out.Ack(r.held[i])
	}
	r.held = r.held[:0]
	return nil
}

// source is a Source of readings numbered [0, n) for sink scenarios: it
// emits them, then waits for the end without ending the stream, and notes
// what was acknowledged and what failed.
type source struct {
	n  int
	rs readings

	mu     sync.Mutex
	acked  map[int]bool
	failed map[int]error
}

func newSource(n int) *source {
	return &source{n: n, rs: newReadings(), acked: map[int]bool{}, failed: map[int]error{}}
}

var _ topology.Acknowledger = (*source)(nil)

func (s *source) Run(ctx context.Context, out topology.SourceEmitter) error {
	for i := range s.n {
		if err := out.EmitTracked(s.rs.one(i), uint64(i)); err != nil {
			return nil
		}
	}
	_ = out.Flush()
	<-ctx.Done()
	return nil
}

func (s *source) Ack(id uint64) {
	s.mu.Lock()
	s.acked[int(id)] = true
	s.mu.Unlock()
}

func (s *source) Fail(id uint64, reason acker.Reason, err error) {
	s.mu.Lock()
	s.failed[int(id)] = fmt.Errorf("%v: %w", reason, err)
	s.mu.Unlock()
}

// Redeliver returns reading id again: readings are a function of their
// number.
func (s *source) Redeliver(id uint64) (particle.Particle, error) { return s.rs.one(int(id)), nil }

// state returns the numbers acknowledged and the failures so far.
func (s *source) state() (acked []int, failed map[int]error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := range s.acked {
		acked = append(acked, n)
	}
	slices.Sort(acked)
	failed = make(map[int]error, len(s.failed))
	for n, err := range s.failed {
		failed[n] = err
	}
	return acked, failed
}
