package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
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
type leasedFeed struct {
	w        *Worker
	name     string
	instance int
	key      string
	inner    topology.Source
	ackr     topology.Acknowledger // nil when inner is not one
	// disconnect ends inner's connection, which outlives its Run.
	disconnect func() error
}

var (
	_ topology.Source       = (*leasedFeed)(nil)
	_ topology.Acknowledger = (*leasedFeed)(nil)
)

// LeaseFeed returns src, an instance of a live source such as MQTT,
// leased: of all the workers, the one holding the lease of this instance
// runs it, and when that worker dies another takes the lease and runs the
// instance in its place. disconnect ends src's connection to its broker:
// the worker calls it before it lets the lease go. Give LeaseFeed to the
// pipeline's build (pipeline.Options.LeaseFeed). See the package doc.
func (w *Worker) LeaseFeed(name string, instance int, src topology.Source, disconnect func() error) topology.Source {
	f := &leasedFeed{w: w, name: name, instance: instance, key: sourceKey(name, instance), inner: src, disconnect: disconnect}
	f.ackr, _ = src.(topology.Acknowledger)
	return f
}

// Run waits for the lease, then runs the inner source until ctx ends or
// the lease is lost. It returns nil when ctx ends without the lease, and
// never ends the stream while the pipeline runs on: a worker that lost
// the lease waits for ctx.
func (f *leasedFeed) Run(ctx context.Context, out topology.SourceEmitter) error {
	log := f.w.cfg.Logger.With("worker", f.w.cfg.Worker, "lease", f.key)
	rev, ok := f.acquire(ctx)
	if !ok {
		return nil
	}
	log.Info("lease taken")
	f.w.hold(f.key, true)
	defer f.w.hold(f.key, false)
	heldCtx, lose := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { f.w.renewLease(heldCtx, lose, f.key, rev, nil) })
	err := f.runHeld(heldCtx, out)
	lost := errors.Is(context.Cause(heldCtx), errLeaseLost)
	lose(nil)
	wg.Wait()
	// The session is left to the worker taking the instance over: the
	// inner source disconnects before the lease is free.
	err = errors.Join(err, f.disconnect())
	if lost {
		// Another worker may hold the lease and run the instance now:
		// this one must not end its stream.
		log.Warn("lease lost: leaving the source to another worker")
		<-ctx.Done()
		return nil
	}
	rel, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = f.w.leases.Delete(rel, f.key)
	return err
}

// runHeld runs the inner source in a holding of its own.
func (f *leasedFeed) runHeld(ctx context.Context, out topology.SourceEmitter) error {
	epoch, err := f.w.nextEpoch(ctx, f.key)
	if err != nil {
		return fmt.Errorf("cluster: lease %s: counting the holdings: %w", f.key, err)
	}
	skipper, ok := out.(topology.Skipper)
	if !ok {
		return fmt.Errorf("cluster: lease %s: the emitter cannot renumber the particles", f.key)
	}
	// The particles of this holding take numbers no earlier holding, on
	// any worker, gave: receivers would drop them as copies. This worker
	// holds the instance once, so nothing was numbered here before.
	skipper.Skip(epoch << epochShift)
	return f.inner.Run(ctx, out)
}

// acquire takes the lease: at once when this worker is the instance's
// preferred one among those announced, otherwise once the lease was free
// for a whole lease TTL, in which the preferred worker did not take it.
// It first waits a lease TTL, so that workers started together see each
// other before taking anything: a lease is held until its worker stops
// or dies. It returns false when ctx ends first.
func (f *leasedFeed) acquire(ctx context.Context) (rev uint64, ok bool) {
	log := f.w.cfg.Logger.With("worker", f.w.cfg.Worker, "lease", f.key)
	settle := time.NewTimer(f.w.cfg.LeaseTTL)
	defer settle.Stop()
	select {
	case <-ctx.Done():
		return 0, false
	case <-settle.C:
	}
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
func (f *leasedFeed) Ack(msgID uint64) {
	if f.ackr != nil {
		f.ackr.Ack(msgID)
	}
}

// Fail implements topology.Acknowledger.
func (f *leasedFeed) Fail(msgID uint64, reason acker.Reason, err error) {
	if f.ackr != nil {
		f.ackr.Fail(msgID, reason, err)
	}
}

// Redeliver implements topology.Acknowledger.
func (f *leasedFeed) Redeliver(msgID uint64) (particle.Particle, error) {
	if f.ackr == nil {
		return particle.Particle{}, fmt.Errorf("cluster: %w", topology.ErrNotAcknowledger)
	}
	return f.ackr.Redeliver(msgID)
}
