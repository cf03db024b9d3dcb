package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// leasedSource runs its inner source on the worker holding its lease. It
// tracks every particle the inner source emits, so that it learns when
// JetStream confirmed them all before it marks the source done.
type leasedSource struct {
	w         *Worker
	key       string
	inner     topology.Source
	innerAckr topology.Acknowledger

	emitted, ended atomic.Int64
	confirmed      chan struct{} // signalled when ended catches up with emitted

	// The particles are numbered from 1 in the order the inner source
	// emits them; a checkpoint is the prefix of them that JetStream
	// confirmed, from which a worker taking the lease over resumes.
	// ran tells that the inner source ran: it runs once, so a holder that
	// lost the lease afterwards waits for another worker to end it.
	ran bool

	mu       sync.Mutex // guards what follows: Ack comes from the engine
	next     uint64     // the number of the last particle emitted or skipped
	skip     uint64     // the particles to skip: the checkpoint taken over
	prefix   uint64     // every particle up to it was confirmed
	acked    map[uint64]struct{}
	out      topology.SourceEmitter
	recorded uint64 // the checkpoint last written
	// pending holds the particles not yet confirmed, for Redeliver, with
	// the inner source's message id when it tracked them.
	pending map[uint64]pendingParticle
}

// pendingParticle is a particle emitted and not yet confirmed.
type pendingParticle struct {
	p       particle.Particle
	inner   uint64
	tracked bool
}

var (
	_ topology.Source       = (*leasedSource)(nil)
	_ topology.Acknowledger = (*leasedSource)(nil)
)

// checkpointKey is the key of a source instance's checkpoint in the done
// bucket.
func checkpointKey(key string) string { return "checkpoint." + key }

// Run waits for the lease, then replays the inner source unless another
// worker already replayed it to its end: then it returns at once, and the
// end of stream goes out again, which receivers take once. A worker that
// loses the lease (fenced off, or its renewals unanswered) leaves the
// replay to the worker taking the lease over and, since a source runs
// once, waits until that one marked it done, then ends its stream the
// same way. It returns nil when ctx ends first.
func (l *leasedSource) Run(ctx context.Context, out topology.SourceEmitter) error {
	log := l.w.cfg.Logger.With("worker", l.w.cfg.Worker, "lease", l.key)
	ticker := time.NewTicker(l.w.cfg.LeaseTTL / 3)
	defer ticker.Stop()
	for {
		// A fenced worker takes no lease: it may not learn that it has
		// one.
		if fenced, _ := l.w.fenced(); !fenced {
			done, err := l.attempt(ctx, out, log)
			switch {
			case done || ctx.Err() != nil:
				return nil
			case err != nil:
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// attempt takes the lease and replays the source, or, if the source ran
// here already, checks whether another worker marked it done. It reports
// whether the source instance ends here: replayed or marked done. A lease
// lost is no error: the worker tries again later.
func (l *leasedSource) attempt(ctx context.Context, out topology.SourceEmitter, log *slog.Logger) (bool, error) {
	if l.ran {
		if _, err := l.w.done.Get(ctx, l.key); err != nil {
			return false, nil
		}
		log.Info("replayed to its end by another worker: ending the stream")
		// Its last particles go out with the end of stream, which a
		// fenced worker does not publish.
		l.w.awaitUnfenced(ctx)
		return true, nil
	}
	rev, err := l.w.leases.Create(ctx, l.key, []byte(l.w.cfg.Worker))
	switch {
	case err == nil:
		log.Info("lease taken")
	case ctx.Err() != nil:
		return true, nil
	case !errors.Is(err, jetstream.ErrKeyExists):
		log.Warn("taking the lease failed", "err", err)
		return false, nil
	default:
		return false, nil
	}
	err = l.runHeld(ctx, out, rev)
	if errors.Is(err, errLeaseLost) {
		log.Warn("lease lost: leaving the source to another worker", "err", err, "replayed", l.ran)
		return false, nil
	}
	return true, err
}

// runHeld replays the source while renewing the lease rev. It returns an
// error wrapping errLeaseLost when it lost the lease.
func (l *leasedSource) runHeld(ctx context.Context, out topology.SourceEmitter, rev uint64) error {
	heldCtx, lose := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	stopRenewing := func() {
		lose(nil)
		wg.Wait()
	}
	defer stopRenewing()
	l.w.hold(l.key, true)
	defer l.w.hold(l.key, false)
	wg.Go(func() { l.w.renewLease(heldCtx, lose, l.key, rev, l.checkpoint) })

	_, err := l.w.read(heldCtx, l.w.done, l.key)
	if err == nil {
		stopRenewing()
		l.w.release(ctx, l.key)
		return nil
	}
	if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return l.gaveUp(ctx, heldCtx, err)
	}
	if err := l.resume(heldCtx, out); err != nil {
		return l.gaveUp(ctx, heldCtx, err)
	}
	if heldCtx.Err() != nil {
		// Lost while resuming: started now, the source would have run
		// here, and could never run again.
		return l.gaveUp(ctx, heldCtx, heldCtx.Err())
	}
	l.ran = true
	err = l.inner.Run(heldCtx, &trackingEmitter{SourceEmitter: out, l: l})
	switch {
	case errors.Is(err, jetstreamedge.ErrFenced):
		// The transport refused a particle before the renewals learnt of
		// the fence.
		return errFenced
	case errors.Is(context.Cause(heldCtx), errLeaseLost):
		// Another worker replays the source now: this one must not end
		// its stream until that one did.
		return context.Cause(heldCtx)
	case err != nil || ctx.Err() != nil:
		return err
	}
	// Everything emitted is confirmed before the source counts as done:
	// until then, a worker taking over replays it.
	for l.ended.Load() < l.emitted.Load() {
		select {
		case <-l.confirmed:
		case <-heldCtx.Done():
			if errors.Is(context.Cause(heldCtx), errLeaseLost) {
				// The worker taking the lease replays what was not
				// confirmed, and ends the stream: this one must not
				// before it.
				return context.Cause(heldCtx)
			}
			return nil
		}
	}
	if err := l.w.retry(heldCtx, l.key, func() error {
		_, err := l.w.done.Put(heldCtx, l.key, []byte(l.w.cfg.Worker))
		return err
	}); err != nil {
		return l.gaveUp(ctx, heldCtx, err)
	}
	stopRenewing()
	l.w.release(ctx, l.key)
	return nil
}

// renewLease renews the lease key, taken at rev, every third of its TTL
// until ctx ends, calling renewed (if set) after each renewal. A renewal
// that fails is tried again at the next tick while the lease is sure to
// outlast it, so that a NATS server's election passes; when another
// worker took the lease, or it may have expired before the next attempt,
// renewLease cancels the holder with errLeaseLost.
func (w *Worker) renewLease(ctx context.Context, lose context.CancelCauseFunc, key string, rev uint64, renewed func(context.Context)) {
	every := w.cfg.LeaseTTL / 3
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	// written is when the lease was last written, at the latest: it lasts
	// a TTL from then.
	written := time.Now()
	fenced, raised := w.fenced()
	for {
		if fenced {
			// The holder stops before the lease can expire out of its
			// reach, as the worker's units do.
			lose(errFenced)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-raised:
			fenced = true
			continue
		case <-ticker.C:
		}
		start := time.Now()
		next, err := w.leases.Update(ctx, key, []byte(w.cfg.Worker), rev)
		switch {
		case err == nil:
			rev, written = next, start
			if renewed != nil {
				renewed(ctx)
			}
			continue
		case ctx.Err() != nil:
			return
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch), time.Since(written)+every >= w.cfg.LeaseTTL:
			lose(errLeaseLost)
			return
		}
		w.cfg.Logger.Warn("renewing a lease failed: trying again", "worker", w.cfg.Worker, "lease", key, "err", err)
	}
}

// retry calls op on the bucket entry key until it succeeds, finds no
// entry or ctx ends, trying again while the bucket does not answer (a
// NATS node's election).
func (w *Worker) retry(ctx context.Context, key string, op func() error) error {
	for {
		err := op()
		if err == nil || errors.Is(err, jetstream.ErrKeyNotFound) || ctx.Err() != nil {
			return err
		}
		w.cfg.Logger.Warn("a bucket did not answer: trying again", "worker", w.cfg.Worker, "key", key, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(w.cfg.LeaseTTL / 6):
		}
	}
}

// read reads key from kv, trying again while the bucket does not answer.
func (w *Worker) read(ctx context.Context, kv jetstream.KeyValue, key string) (jetstream.KeyValueEntry, error) {
	var e jetstream.KeyValueEntry
	err := w.retry(ctx, key, func() error {
		var err error
		e, err = kv.Get(ctx, key)
		return err
	})
	return e, err
}

// gaveUp returns what runHeld returns when it could not start the
// source (err): nothing once ctx ended, and, when the lease was lost
// meanwhile (heldCtx's cause), nothing either, once ctx ends, since the
// worker that took the lease ends the stream.
func (l *leasedSource) gaveUp(ctx, heldCtx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return nil
	case errors.Is(context.Cause(heldCtx), errLeaseLost):
		return context.Cause(heldCtx)
	}
	return err
}

// resume reads the checkpoint a previous holder left: the particles up to
// it were confirmed, and are skipped, keeping their numbers, when out can
// skip.
func (l *leasedSource) resume(ctx context.Context, out topology.SourceEmitter) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next, l.skip, l.prefix, l.acked, l.pending = 0, 0, 0, map[uint64]struct{}{}, map[uint64]pendingParticle{}
	l.out = out
	e, err := l.w.read(ctx, l.w.done, checkpointKey(l.key))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil
	case err != nil:
		return err
	}
	n, err := strconv.ParseUint(string(e.Value()), 10, 64)
	if err != nil {
		return nil
	}
	l.skip, l.prefix, l.recorded = n, n, n
	l.w.cfg.Logger.Info("resuming past the checkpoint", "lease", l.key, "confirmed", n)
	return nil
}

// checkpoint records the confirmed prefix when it moved.
func (l *leasedSource) checkpoint(ctx context.Context) {
	// Under the lock: resume, which holds it while it reads the bucket,
	// sets both, and a renewal may come first when the bucket is slow.
	l.mu.Lock()
	n, recorded := l.prefix, l.recorded
	l.mu.Unlock()
	if n == recorded {
		return
	}
	if _, err := l.w.done.Put(ctx, checkpointKey(l.key), []byte(strconv.FormatUint(n, 10))); err == nil {
		l.mu.Lock()
		l.recorded = n
		l.mu.Unlock()
	}
}

// number numbers the next particle and tells whether to skip it.
func (l *leasedSource) number() (n uint64, skip bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	return l.next, l.next <= l.skip
}

// confirm records that particle n was confirmed.
func (l *leasedSource) confirm(n uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked[n] = struct{}{}
	for {
		if _, ok := l.acked[l.prefix+1]; !ok {
			return
		}
		delete(l.acked, l.prefix+1)
		l.prefix++
	}
}

// release frees the lease key, also once ctx ended.
func (w *Worker) release(ctx context.Context, key string) {
	rel, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = w.leases.Delete(rel, key)
}

// Ack implements topology.Acknowledger.
func (l *leasedSource) Ack(n uint64) {
	if pp := l.take(n); pp.tracked {
		l.innerAckr.Ack(pp.inner)
	}
	l.confirm(n)
	l.end()
}

// Fail implements topology.Acknowledger. The particle was dead-lettered:
// it counts as ended, and as confirmed.
func (l *leasedSource) Fail(n uint64, reason acker.Reason, err error) {
	if pp := l.take(n); pp.tracked {
		l.innerAckr.Fail(pp.inner, reason, err)
	}
	l.confirm(n)
	l.end()
}

// Redeliver implements topology.Acknowledger.
func (l *leasedSource) Redeliver(n uint64) (particle.Particle, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pp, ok := l.pending[n]
	if !ok {
		return particle.Particle{}, fmt.Errorf("cluster: no particle %d pending", n)
	}
	return pp.p, nil
}

// take removes particle n from what is pending.
func (l *leasedSource) take(n uint64) pendingParticle {
	l.mu.Lock()
	defer l.mu.Unlock()
	pp := l.pending[n]
	delete(l.pending, n)
	return pp
}

func (l *leasedSource) end() {
	if l.ended.Add(1) >= l.emitted.Load() {
		select {
		case l.confirmed <- struct{}{}:
		default:
		}
	}
}

// trackingEmitter tracks every particle under its number.
type trackingEmitter struct {
	topology.SourceEmitter
	l *leasedSource
}

// Emit implements topology.SourceEmitter.
func (e *trackingEmitter) Emit(p particle.Particle) error { return e.emit(p, pendingParticle{p: p}) }

// EmitTracked implements topology.SourceEmitter.
func (e *trackingEmitter) EmitTracked(p particle.Particle, msgID uint64) error {
	if e.l.innerAckr == nil {
		return fmt.Errorf("cluster: %w", topology.ErrNotAcknowledger)
	}
	return e.emit(p, pendingParticle{p: p, inner: msgID, tracked: true})
}

func (e *trackingEmitter) emit(p particle.Particle, pp pendingParticle) error {
	l := e.l
	n, skip := l.number()
	if skip {
		l.out.Skip(1)
		if pp.tracked {
			l.innerAckr.Ack(pp.inner)
		}
		return nil
	}
	l.mu.Lock()
	l.pending[n] = pp
	l.mu.Unlock()
	l.emitted.Add(1)
	if err := e.SourceEmitter.EmitTracked(p, n); err != nil {
		l.take(n)
		l.emitted.Add(-1)
		return err
	}
	return nil
}

// hold records whether this worker holds the lease key.
func (w *Worker) hold(key string, held bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if held {
		w.held[key] = true
	} else {
		delete(w.held, key)
	}
}
