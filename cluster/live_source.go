package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// epochShift places a holding's particle numbers: the n-th particle an
// instance emits in its k-th holding is numbered k<<epochShift + n, apart
// from every other holding's (2^40 particles a holding, 2^23 holdings
// before the numbers reach the meta particles' bit).
const epochShift = 40

// epochKey is the key of a live source instance's holding count in the
// done bucket.
func epochKey(key string) string { return "epoch." + key }

// leasedLive runs an instance of a live source (MQTT) on the worker
// holding its lease. The instance has a client id of its own, the same
// on every worker (see pipeline.Options.Cluster): the broker keeps its
// session, with the messages queued or sent and not acknowledged, while no
// worker holds the lease, and gives them to the worker that takes it
// over. Nothing is checkpointed: what the instance acknowledged to the
// broker JetStream already holds (mode tree), and the rest the broker
// sends again. A holder hands the instance over to a worker that joined
// at the one point where that loses and doubles nothing: it stops taking
// messages, waits until JetStream confirmed what it emitted, so that all
// of it is acknowledged, and disconnects, leaving the rest in the session.
//
// Each holding runs a source of its own, since a source runs once. The
// leased source gives the engine numbers of its own for the tracked particles, so
// that the acknowledgements of a holding's particles reach its source
// even after the holding ended.
type leasedLive struct {
	w    *Worker
	key  string
	open func() (topology.Source, func() error)
	// numbered is how many particle numbers the engine gave this
	// instance, at least: the particles emitted and those skipped. A
	// particle rejected as wild counts but takes none, a failed one the
	// engine emits again takes one and does not count: both are few.
	numbered atomic.Uint64

	mu      sync.Mutex // guards what follows: the engine acknowledges concurrently
	next    uint64
	pending map[uint64]trackedParticle
}

// trackedParticle is a particle emitted tracked: the holding that
// emitted it and its number in the holding's source.
type trackedParticle struct {
	h  *holding
	id uint64
}

// holding is one holding of an instance: its source, and the count of the
// particles it emitted tracked that are not finished, which a hand-over
// waits for.
type holding struct {
	ackr topology.Acknowledger // nil when the source is not one
	// What follows is guarded by the leasedLive's mu.
	pending int
	settled chan struct{} // when set, closed once pending is 0
}

var (
	_ topology.Source       = (*leasedLive)(nil)
	_ topology.Acknowledger = (*leasedLive)(nil)
)

// LeaseLiveSource returns an instance of a live source such as MQTT, leased: of
// all the workers, the one holding the lease of this instance runs it, and
// when that worker dies another takes the lease and runs the instance in
// its place; when a worker joins, it takes its share of the instances from
// the others. open makes the instance's source for a holding, with the
// function that disconnects it from its broker, which the worker calls
// before it lets the lease go. A worker that could not renew the lease
// takes part again: it takes the lease once it is free, as the others do.
// Give LeaseLiveSource to the pipeline's build (pipeline.Options.LeaseLiveSource),
// which calls it for every instance before the pipeline runs.
//
// The instance's client id is the same on every worker
// (pipeline.Options.Cluster), with a persistent session, and the
// instances of a source split its feed with a shared subscription
// ($share/GROUP/FILTER; Mosquitto 2 takes it from MQTT 3.1.1 clients).
// The broker goes on handing a dead worker's session its share of the
// feed, and keeps those messages, and the ones sent and not acknowledged,
// for the session, until another worker takes the expired lease,
// connects with the same client id and receives them. Mode tree
// acknowledges a message once JetStream confirmed its particles, so
// nothing needs a local spool. The instances of all live sources are
// assigned among the workers announced as units are, so that n instances
// on n workers give each one; a worker takes an instance assigned to
// another only once its lease stayed free for a lease TTL, and takes none
// in its first lease TTL, so that workers started together share without
// moving any.
//
// When a worker joins, a worker holding an instance now assigned to it
// keeps it for Config.RebalanceDelay, then hands it over at the one point
// where nothing is lost or doubled: it stops taking messages from the
// broker, waits (up to a lease TTL) until JetStream confirmed every
// particle it emitted, which acknowledges its message to the broker,
// disconnects cleanly, the session staying, and frees the lease. The
// worker the instance is assigned to takes the lease at once, connects
// with the same client id and receives what the session kept, none of
// which had been emitted. A hand-over that ran out of time disconnects all
// the same: the broker sends the messages not acknowledged again, and
// their particles come out twice, as after a kill.
//
// Each holding of an instance runs a source of its own and numbers the
// instance's particles in a range of its own, counted in the done bucket:
// receivers would otherwise drop a new holder's particles as copies of
// the old one's. A message the broker sends again is a new particle:
// copies of messages whose particles reached JetStream before their
// acknowledgement reached the broker are counted, not dropped (a dedup
// operation can drop them).
func (w *Worker) LeaseLiveSource(name string, instance int, open func() (topology.Source, func() error)) topology.Source {
	key := sourceKey(name, instance)
	w.mu.Lock()
	w.liveSources = append(w.liveSources, key)
	w.mu.Unlock()
	return &leasedLive{w: w, key: key, open: open, pending: map[uint64]trackedParticle{}}
}

// How a holding ended.
type holdingEnd int

const (
	stopped    holdingEnd = iota // the pipeline stops, or the source failed
	lost                         // the lease could not be renewed
	handedOver                   // the instance was assigned to another worker
)

// Run takes the lease and runs the instance until ctx ends, taking the
// lease again whenever it was lost or handed over and is free again. It
// never ends the stream while the pipeline runs on: another worker may run
// the instance.
func (f *leasedLive) Run(ctx context.Context, out topology.SourceEmitter) error {
	log := f.w.cfg.Logger.With("worker", f.w.cfg.Worker, "lease", f.key)
	// Workers started together see each other before any takes a lease,
	// so that they share the instances without handing them over.
	if !sleep(ctx, f.w.cfg.LeaseTTL) {
		return nil
	}
	for {
		rev, ok := f.acquire(ctx)
		if !ok {
			return nil
		}
		log.Info("lease taken")
		end, err := f.runHolding(ctx, out, rev)
		switch end {
		case stopped:
			return err
		case lost:
			log.Warn("lease lost: leaving the source to another worker until the lease is free")
		case handedOver:
			log.Info("lease handed over to the worker the instance is assigned to")
		}
	}
}

// sleep waits for d and reports whether ctx is still going.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// errHandOver stops a holding's source for a hand-over.
var errHandOver = errors.New("cluster: instance assigned to another worker")

// runHolding runs a holding of the instance, which took the lease at rev,
// until ctx ends, the lease is lost, the instance was assigned to another
// worker for the rebalance delay, or the worker leaves. It hands the
// instance over by stopping its source, waiting (up to a lease TTL) until
// the particles it emitted finished, which acknowledges their messages to
// the broker, disconnecting, and freeing the lease.
func (f *leasedLive) runHolding(ctx context.Context, out topology.SourceEmitter, rev uint64) (holdingEnd, error) {
	// acquire recorded the lease held.
	defer f.w.hold(f.key, false)
	heldCtx, lose := context.WithCancelCause(ctx)
	srcCtx, handOver := context.WithCancelCause(heldCtx)
	var wg sync.WaitGroup
	wg.Go(func() { f.w.renewLease(heldCtx, lose, f.key, rev, nil) })
	wg.Go(func() {
		if f.w.awaitHandOver(srcCtx, f.key) {
			handOver(errHandOver)
		}
	})
	inner, disconnect := f.open()
	h := &holding{}
	h.ackr, _ = inner.(topology.Acknowledger)
	err := f.runSource(srcCtx, out, inner, h)
	end := stopped
	if errors.Is(context.Cause(srcCtx), errHandOver) && heldCtx.Err() == nil {
		end = handedOver
		f.settle(heldCtx, h)
	}
	if errors.Is(context.Cause(heldCtx), errLeaseLost) {
		end = lost
	}
	handOver(nil)
	lose(nil)
	wg.Wait()
	// The session is left to the worker taking the instance over: the
	// source acknowledges what finished and disconnects before the lease
	// is free.
	err = errors.Join(err, disconnect())
	if end == lost {
		// Another worker may hold the lease and run the instance now.
		return lost, nil
	}
	f.w.release(ctx, f.key)
	if end == handedOver && err != nil {
		f.w.cfg.Logger.Warn("handing the instance over", "worker", f.w.cfg.Worker, "lease", f.key, "err", err)
		err = nil
	}
	return end, err
}

// settle waits until the particles holding h emitted tracked finished, for
// a lease TTL at most: past it, the messages not acknowledged go to the
// next holder again, and their particles come out twice.
func (f *leasedLive) settle(ctx context.Context, h *holding) {
	f.mu.Lock()
	if h.pending == 0 {
		f.mu.Unlock()
		return
	}
	settled := make(chan struct{})
	h.settled = settled
	f.mu.Unlock()
	t := time.NewTimer(f.w.cfg.LeaseTTL)
	defer t.Stop()
	select {
	case <-settled:
	case <-ctx.Done():
	case <-t.C:
		f.mu.Lock()
		n := h.pending
		f.mu.Unlock()
		f.w.cfg.Logger.Warn("handing the instance over before its particles finished: the broker sends their messages again",
			"worker", f.w.cfg.Worker, "lease", f.key, "unfinished", n)
	}
}

// awaitHandOver reports true once the instance key has been assigned to
// another worker, among those announced, for the rebalance delay, or at
// once when the worker leaves; false when ctx ends first.
func (w *Worker) awaitHandOver(ctx context.Context, key string) bool {
	ticker := time.NewTicker(w.refreshEvery())
	defer ticker.Stop()
	var since time.Time
	for {
		select {
		case <-ctx.Done():
			return false
		case <-w.left:
			return true
		case <-ticker.C:
		}
		if w.liveOwner(key) == w.self {
			since = time.Time{}
			continue
		}
		if since.IsZero() {
			since = time.Now()
		}
		if time.Since(since) >= w.cfg.RebalanceDelay {
			return true
		}
	}
}

// runSource runs inner, holding h's source.
func (f *leasedLive) runSource(ctx context.Context, out topology.SourceEmitter, inner topology.Source, h *holding) error {
	epoch, err := f.w.nextEpoch(ctx, f.key)
	if err != nil {
		return fmt.Errorf("cluster: lease %s: counting the holdings: %w", f.key, err)
	}
	// The particles of this holding take numbers no other holding, on any
	// worker, gave: receivers would drop them as copies.
	if from, n := epoch<<epochShift, f.numbered.Load(); n < from {
		out.Skip(from - n)
		f.numbered.Store(from)
	}
	return inner.Run(ctx, &holdingEmitter{SourceEmitter: out, f: f, h: h})
}

// holdingEmitter is what a holding's source emits into.
type holdingEmitter struct {
	topology.SourceEmitter
	f *leasedLive
	h *holding
}

// Emit implements topology.SourceEmitter.
func (e *holdingEmitter) Emit(p particle.Particle) error {
	err := e.SourceEmitter.Emit(p)
	if err == nil {
		e.f.numbered.Add(1)
	}
	return err
}

// EmitTracked implements topology.SourceEmitter.
func (e *holdingEmitter) EmitTracked(p particle.Particle, id uint64) error {
	if e.h.ackr == nil {
		return fmt.Errorf("cluster: %w", topology.ErrNotAcknowledger)
	}
	f := e.f
	f.mu.Lock()
	f.next++
	n := f.next
	f.pending[n] = trackedParticle{h: e.h, id: id}
	e.h.pending++
	f.mu.Unlock()
	if err := e.SourceEmitter.EmitTracked(p, n); err != nil {
		f.take(n)
		f.finish(e.h)
		return err
	}
	f.numbered.Add(1)
	return nil
}

// take removes the tracked particle n. Call finish once its holding's
// source learnt its outcome.
func (f *leasedLive) take(n uint64) (trackedParticle, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tp, ok := f.pending[n]
	delete(f.pending, n)
	return tp, ok
}

// finish counts a particle of holding h finished, once its source knows:
// a hand-over waiting for it then disconnects with its message
// acknowledged.
func (f *leasedLive) finish(h *holding) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h.pending--; h.pending == 0 && h.settled != nil {
		close(h.settled)
		h.settled = nil
	}
}

// acquire takes the lease, and records it held: at once when the
// instance is assigned to this worker among those announced, otherwise
// once the lease was free for a whole lease TTL, in which the worker it is
// assigned to did not take it; never once the worker leaves. It returns
// false when ctx ends first.
func (f *leasedLive) acquire(ctx context.Context) (rev uint64, ok bool) {
	log := f.w.cfg.Logger.With("worker", f.w.cfg.Worker, "lease", f.key)
	ticker := time.NewTicker(f.w.cfg.LeaseTTL / 3)
	defer ticker.Stop()
	var freeSince time.Time
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return 0, false
			case <-ticker.C:
			}
		}
		_, err := f.w.leases.Get(ctx, f.key)
		switch {
		case err == nil:
			freeSince = time.Time{}
			continue
		case !errors.Is(err, jetstream.ErrKeyNotFound):
			if ctx.Err() == nil {
				log.Warn("reading the lease failed", "err", err)
			}
			continue
		case freeSince.IsZero():
			freeSince = time.Now()
		}
		if f.w.leaves() || f.w.liveOwner(f.key) != f.w.self && time.Since(freeSince) < f.w.cfg.LeaseTTL {
			continue
		}
		rev, err := f.w.leases.Create(ctx, f.key, []byte(f.w.cfg.Worker))
		switch {
		case err == nil && f.w.claim(f.key):
			return rev, true
		case err == nil:
			// The worker began leaving as it took the lease.
			f.w.release(ctx, f.key)
		case ctx.Err() != nil:
			return 0, false
		case !errors.Is(err, jetstream.ErrKeyExists):
			log.Warn("taking the lease failed", "err", err)
		}
	}
}

// liveOwner returns the worker (its key in the announcement bucket) that
// should run the live source instance key among the workers announced:
// the instances of every live source spread over them as units do (see
// assign), so that n instances on n workers give each worker one.
func (w *Worker) liveOwner(key string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if owner, ok := assign(w.liveSources, w.live)[key]; ok {
		return owner
	}
	return w.self
}

// nextEpoch counts a new holding of the instance key and returns its
// number, from 1. The caller holds the lease: nobody counts meanwhile.
func (w *Worker) nextEpoch(ctx context.Context, key string) (uint64, error) {
	k := epochKey(key)
	e, err := w.done.Get(ctx, k)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		_, err = w.done.Create(ctx, k, []byte("1"))
		return 1, err
	case err != nil:
		return 0, err
	}
	n, err := strconv.ParseUint(string(e.Value()), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("holdings %q: %w", e.Value(), err)
	}
	if n+1 >= 1<<(63-epochShift) {
		return 0, fmt.Errorf("%d holdings: the particle numbers are used up", n)
	}
	_, err = w.done.Update(ctx, k, []byte(strconv.FormatUint(n+1, 10)), e.Revision())
	return n + 1, err
}

// Ack implements topology.Acknowledger.
func (f *leasedLive) Ack(n uint64) {
	if tp, ok := f.take(n); ok {
		tp.h.ackr.Ack(tp.id)
		f.finish(tp.h)
	}
}

// Fail implements topology.Acknowledger.
func (f *leasedLive) Fail(n uint64, reason acker.Reason, err error) {
	if tp, ok := f.take(n); ok {
		tp.h.ackr.Fail(tp.id, reason, err)
		f.finish(tp.h)
	}
}

// Redeliver implements topology.Acknowledger.
func (f *leasedLive) Redeliver(n uint64) (particle.Particle, error) {
	f.mu.Lock()
	tp, ok := f.pending[n]
	f.mu.Unlock()
	if !ok {
		return particle.Particle{}, fmt.Errorf("cluster: lease %s: no particle %d pending", f.key, n)
	}
	return tp.h.ackr.Redeliver(tp.id)
}
