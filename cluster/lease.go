package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/acker"
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
}

var (
	_ topology.Source       = (*leasedSource)(nil)
	_ topology.Acknowledger = (*leasedSource)(nil)
)

// leaseID wraps the inner source's message id: every particle is tracked.
type leaseID struct{ inner any }

// Run waits for the lease, then replays the inner source unless another
// worker already replayed it to its end: then it returns at once, and the
// end of stream goes out again, which receivers take once. It returns nil
// when ctx ends without the lease.
func (l *leasedSource) Run(ctx context.Context, out topology.SourceEmitter) error {
	log := l.w.cfg.Logger.With("worker", l.w.cfg.Worker, "lease", l.key)
	ticker := time.NewTicker(l.w.cfg.LeaseTTL / 3)
	defer ticker.Stop()
	for {
		rev, err := l.w.leases.Create(ctx, l.key, []byte(l.w.cfg.Worker))
		switch {
		case err == nil:
			log.Info("lease taken")
			return l.runHeld(ctx, out, rev)
		case ctx.Err() != nil:
			return nil
		case !errors.Is(err, jetstream.ErrKeyExists):
			log.Warn("taking the lease failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// runHeld replays the source while renewing the lease rev.
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
	wg.Go(func() { l.renew(heldCtx, lose, rev) })

	if _, err := l.w.done.Get(heldCtx, l.key); err == nil {
		stopRenewing()
		l.release(ctx)
		return nil
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return err
	}
	err := l.inner.Run(heldCtx, &trackingEmitter{SourceEmitter: out, l: l})
	switch {
	case errors.Is(context.Cause(heldCtx), errLeaseLost):
		// Another worker replays the source now: this one must not end
		// its stream.
		l.w.cfg.Logger.Warn("lease lost: leaving the source to another worker", "lease", l.key)
		<-ctx.Done()
		return nil
	case err != nil || ctx.Err() != nil:
		return err
	}
	// Everything emitted is confirmed before the source counts as done:
	// until then, a worker taking over replays it.
	for l.ended.Load() < l.emitted.Load() {
		select {
		case <-l.confirmed:
		case <-heldCtx.Done():
			return nil
		}
	}
	if _, err := l.w.done.Put(heldCtx, l.key, []byte(l.w.cfg.Worker)); err != nil {
		return err
	}
	stopRenewing()
	l.release(ctx)
	return nil
}

// renew renews the lease every third of its TTL until ctx ends; when it
// cannot, it cancels the replay.
func (l *leasedSource) renew(ctx context.Context, lose context.CancelCauseFunc, rev uint64) {
	ticker := time.NewTicker(l.w.cfg.LeaseTTL / 3)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		next, err := l.w.leases.Update(ctx, l.key, []byte(l.w.cfg.Worker), rev)
		if err != nil {
			if ctx.Err() == nil {
				lose(errLeaseLost)
			}
			return
		}
		rev = next
	}
}

func (l *leasedSource) release(ctx context.Context) {
	rel, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = l.w.leases.Delete(rel, l.key)
}

// Ack implements topology.Acknowledger.
func (l *leasedSource) Ack(msgID any) {
	if id := msgID.(leaseID); id.inner != nil && l.innerAckr != nil {
		l.innerAckr.Ack(id.inner)
	}
	l.end()
}

// Fail implements topology.Acknowledger. The particle was dead-lettered:
// it counts as ended.
func (l *leasedSource) Fail(msgID any, reason acker.Reason, err error) {
	if id := msgID.(leaseID); id.inner != nil && l.innerAckr != nil {
		l.innerAckr.Fail(id.inner, reason, err)
	}
	l.end()
}

func (l *leasedSource) end() {
	if l.ended.Add(1) >= l.emitted.Load() {
		select {
		case l.confirmed <- struct{}{}:
		default:
		}
	}
}

// trackingEmitter gives every particle a message id.
type trackingEmitter struct {
	topology.SourceEmitter
	l *leasedSource
}

func (e *trackingEmitter) Emit(p particle.Particle, msgID any) error {
	e.l.emitted.Add(1)
	if err := e.SourceEmitter.Emit(p, leaseID{inner: msgID}); err != nil {
		e.l.emitted.Add(-1)
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
