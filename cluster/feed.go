package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/jetstreamedge"
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

// leasedFeed runs an instance of a live source (MQTT) on the worker
// holding its lease. The instance has a client id of its own, the same
// on every worker (see pipeline.Options.Cluster): the broker keeps its
// session, with the messages queued or sent and not acknowledged, while no
// worker holds the lease, and gives them to the worker that takes it
// over. Nothing is checkpointed: what the instance acknowledged to the
// broker JetStream already holds (mode tree), and the rest the broker
// sends again.
//
// Each holding runs a source of its own, since a source runs once. The
// feed gives the engine numbers of its own for the tracked particles, so
// that the acknowledgements of a holding's particles reach its source
// even after the holding ended.
type leasedFeed struct {
	w        *Worker
	name     string
	instance int
	key      string
	open     func() (topology.Source, func() error)
	// numbered is how many particle numbers the engine gave this
	// instance, at least: the particles emitted and those skipped. A
	// particle rejected as wild counts but takes none, a failed one the
	// engine emits again takes one and does not count: both are few.
	numbered atomic.Uint64

	mu      sync.Mutex // guards what follows: the engine acknowledges concurrently
	next    uint64
	pending map[uint64]trackedParticle
}

// trackedParticle is a particle emitted tracked: the source of its holding
// and its number there.
type trackedParticle struct {
	ackr topology.Acknowledger
	id   uint64
}

var (
	_ topology.Source       = (*leasedFeed)(nil)
	_ topology.Acknowledger = (*leasedFeed)(nil)
)

// LeaseFeed returns an instance of a live source such as MQTT, leased: of
// all the workers, the one holding the lease of this instance runs it, and
// when that worker dies another takes the lease and runs the instance in
// its place. open makes the instance's source for a holding, with the
// function that disconnects it from its broker, which the worker calls
// before it lets the lease go. A worker that could not renew the lease
// takes part again: it takes the lease once it is free, as the others do.
// Give LeaseFeed to the pipeline's build (pipeline.Options.LeaseFeed). See
// the package doc.
func (w *Worker) LeaseFeed(name string, instance int, open func() (topology.Source, func() error)) topology.Source {
	return &leasedFeed{w: w, name: name, instance: instance, key: sourceKey(name, instance), open: open,
		pending: map[uint64]trackedParticle{}}
}

// Run takes the lease and runs the instance until ctx ends, taking the
// lease again whenever it was lost. It never ends the stream while the
// pipeline runs on: another worker may run the instance.
func (f *leasedFeed) Run(ctx context.Context, out topology.SourceEmitter) error {
	log := f.w.cfg.Logger.With("worker", f.w.cfg.Worker, "lease", f.key)
	skipper, ok := out.(topology.Skipper)
	if !ok {
		return fmt.Errorf("cluster: lease %s: the emitter cannot renumber the particles", f.key)
	}
	// Workers started together see each other before any takes a lease:
	// a worker keeps a lease until it stops or dies.
	if !sleep(ctx, f.w.cfg.LeaseTTL) {
		return nil
	}
	for {
		rev, ok := f.acquire(ctx)
		if !ok {
			return nil
		}
		log.Info("lease taken")
		lost, err := f.runHolding(ctx, out, skipper, rev)
		if !lost {
			return err
		}
		log.Warn("lease lost: leaving the source to another worker until the lease is free")
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

// runHolding runs a holding of the instance, which took the lease at rev,
// until ctx ends or the lease is lost.
func (f *leasedFeed) runHolding(ctx context.Context, out topology.SourceEmitter, skipper topology.Skipper, rev uint64) (lost bool, err error) {
	f.w.hold(f.key, true)
	defer f.w.hold(f.key, false)
	heldCtx, lose := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { f.w.renewLease(heldCtx, lose, f.key, rev, nil) })
	inner, disconnect := f.open()
	err = f.runSource(heldCtx, out, skipper, inner)
	lost = errors.Is(context.Cause(heldCtx), errLeaseLost)
	lose(nil)
	wg.Wait()
	// The session is left to the worker taking the instance over: the
	// source disconnects before the lease is free.
	err = errors.Join(err, disconnect())
	if lost {
		// Another worker may hold the lease and run the instance now.
		return true, nil
	}
	rel, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = f.w.leases.Delete(rel, f.key)
	return false, err
}

// runSource runs inner, a holding's source.
func (f *leasedFeed) runSource(ctx context.Context, out topology.SourceEmitter, skipper topology.Skipper, inner topology.Source) error {
	epoch, err := f.w.nextEpoch(ctx, f.key)
	if err != nil {
		return fmt.Errorf("cluster: lease %s: counting the holdings: %w", f.key, err)
	}
	// The particles of this holding take numbers no other holding, on any
	// worker, gave: receivers would drop them as copies.
	if from, n := epoch<<epochShift, f.numbered.Load(); n < from {
		skipper.Skip(from - n)
		f.numbered.Store(from)
	}
	ackr, _ := inner.(topology.Acknowledger)
	return inner.Run(ctx, &feedEmitter{SourceEmitter: out, f: f, ackr: ackr})
}

// feedEmitter is what a holding's source emits into.
type feedEmitter struct {
	topology.SourceEmitter
	f    *leasedFeed
	ackr topology.Acknowledger // the holding's source, nil when it is not one
}

// Emit implements topology.SourceEmitter.
func (e *feedEmitter) Emit(p particle.Particle) error {
	err := e.SourceEmitter.Emit(p)
	if err == nil {
		e.f.numbered.Add(1)
	}
	return err
}

// EmitTracked implements topology.SourceEmitter.
func (e *feedEmitter) EmitTracked(p particle.Particle, id uint64) error {
	if e.ackr == nil {
		return fmt.Errorf("cluster: %w", topology.ErrNotAcknowledger)
	}
	f := e.f
	f.mu.Lock()
	f.next++
	n := f.next
	f.pending[n] = trackedParticle{ackr: e.ackr, id: id}
	f.mu.Unlock()
	if err := e.SourceEmitter.EmitTracked(p, n); err != nil {
		f.take(n)
		return err
	}
	f.numbered.Add(1)
	return nil
}

// take removes the tracked particle n.
func (f *leasedFeed) take(n uint64) (trackedParticle, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tp, ok := f.pending[n]
	delete(f.pending, n)
	return tp, ok
}

// acquire takes the lease: at once when this worker is the instance's
// preferred one among those announced, otherwise once the lease was free
// for a whole lease TTL, in which the preferred worker did not take it.
// (Run first waits a lease TTL, so that workers started together see each
// other before taking anything: a lease is held until its worker stops or
// dies.) It returns false when ctx ends first.
func (f *leasedFeed) acquire(ctx context.Context) (rev uint64, ok bool) {
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
		if !f.w.prefersInstance(ctx, f.name, f.instance) && time.Since(freeSince) < f.w.cfg.LeaseTTL {
			continue
		}
		rev, err := f.w.leases.Create(ctx, f.key, []byte(f.w.cfg.Worker))
		switch {
		case err == nil:
			return rev, true
		case ctx.Err() != nil:
			return 0, false
		case !errors.Is(err, jetstream.ErrKeyExists):
			log.Warn("taking the lease failed", "err", err)
		}
	}
}

// prefersInstance tells whether this worker should run instance of source
// name, among the workers announced.
func (w *Worker) prefersInstance(ctx context.Context, name string, instance int) bool {
	self := jetstreamedge.Token(w.cfg.Worker)
	workers := []string{self}
	lookup, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if keys, err := w.workers.Keys(lookup); err == nil {
		workers = append(workers, keys...)
	}
	return preferredWorker(workers, name, instance) == self
}

// preferredWorker returns the worker that should run instance of source
// name: the instances of a source go round the workers in the order of
// their names, from a place that depends on the source, so that n
// instances on n workers give each worker one.
func preferredWorker(workers []string, name string, instance int) string {
	workers = slices.Compact(slices.Sorted(slices.Values(workers)))
	h := fnv.New32a()
	h.Write([]byte(name))
	return workers[(int(h.Sum32()%uint32(len(workers)))+instance)%len(workers)]
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
func (f *leasedFeed) Ack(n uint64) {
	if tp, ok := f.take(n); ok {
		tp.ackr.Ack(tp.id)
	}
}

// Fail implements topology.Acknowledger.
func (f *leasedFeed) Fail(n uint64, reason acker.Reason, err error) {
	if tp, ok := f.take(n); ok {
		tp.ackr.Fail(tp.id, reason, err)
	}
}

// Redeliver implements topology.Acknowledger.
func (f *leasedFeed) Redeliver(n uint64) (particle.Particle, error) {
	f.mu.Lock()
	tp, ok := f.pending[n]
	f.mu.Unlock()
	if !ok {
		return particle.Particle{}, fmt.Errorf("cluster: lease %s: no particle %d pending", f.key, n)
	}
	return tp.ackr.Redeliver(tp.id)
}
