package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrAlone is what Leave returns when no other worker is announced:
// there is nobody to hand anything over to.
var ErrAlone = errors.New("cluster: no other worker to hand over to")

// leavePoll is how often Leave looks whether the hand-overs are done:
// each takes from a few milliseconds (a unit) to a lease TTL (a live
// instance whose particles wait for JetStream).
const leavePoll = 50 * time.Millisecond

// Leave hands this worker's share of the pipeline over to the other
// workers, for a process about to stop: it withdraws the worker's
// announcement and stops announcing, so that every worker, this one
// among them, assigns the units and live source instances among the
// others; it hands over at once, without the rebalance delay, every live
// instance it holds, as it would to a worker that joined (it stops taking
// messages, waits up to a lease TTL until JetStream confirmed what the
// instance emitted, disconnects keeping the session, and frees the
// lease), and every unit it runs (it stops pulling, gives back what it
// had not finished and unpins the consumer). The workers they are
// assigned to take them at once. Leave returns nil once all of them were
// handed over, or an error wrapping ctx's once ctx ended first: what is
// left is abandoned when the pipeline stops, as after a kill.
//
// With no other worker announced, Leave returns ErrAlone at once and
// changes nothing. A file source replayed on this worker is not handed
// over (see LeaseSource): its replay goes on until the pipeline
// stops, and another worker resumes it once its lease expired.
//
// Call Leave while the pipeline and Run run, then stop them, whatever it
// returned: the worker takes nothing back.
func (w *Worker) Leave(ctx context.Context) error {
	if err := w.refresh(ctx); err != nil {
		return fmt.Errorf("cluster: leaving: reading the workers: %w", err)
	}
	w.mu.Lock()
	if !slices.ContainsFunc(w.live, func(k string) bool { return k != w.self }) {
		w.mu.Unlock()
		return ErrAlone
	}
	first := !w.leaving
	w.leaving = true
	w.live = w.members(w.live, time.Now())
	w.owners = assign(w.edges.Units(), w.live)
	w.mu.Unlock()
	units, live := w.edges.HeldUnits(), w.heldLiveSources()
	w.cfg.Logger.Info("leaving: handing over", "worker", w.cfg.Worker, "units", units, "live_sources", live)
	// The others assign among themselves once the announcement is gone:
	// withdrawn first, it is gone when they find the leases free.
	if err := w.retry(ctx, w.self, func() error { return w.withdraw(ctx) }); err != nil {
		// It expires after a lease TTL: until then, what this worker
		// hands over waits.
		w.cfg.Logger.Warn("leaving: withdrawing the announcement failed", "worker", w.cfg.Worker, "err", err)
	}
	if first {
		close(w.left)
	}
	w.edges.Reassign()
	ticker := time.NewTicker(leavePoll)
	defer ticker.Stop()
	for len(units)+len(live) > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: leaving: units %v and live source instances %v not handed over: %w", units, live, context.Cause(ctx))
		case <-ticker.C:
		}
		units, live = w.edges.HeldUnits(), w.heldLiveSources()
	}
	return nil
}

// leaves reports whether the worker leaves (see Leave).
func (w *Worker) leaves() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.leaving
}

// claim records the live instance key held, after its lease was taken,
// and reports true, unless the worker leaves: a lease taken as Leave began
// goes back.
func (w *Worker) claim(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.leaving {
		return false
	}
	w.held[key] = true
	return true
}

// heldLiveSources returns the live source instances whose leases this worker
// holds.
func (w *Worker) heldLiveSources() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(w.liveSources), func(k string) bool { return !w.held[k] })
}
