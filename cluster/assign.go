package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// assign gives every unit an owner among workers, the same on every
// worker that sees the same workers: each unit, in the order of their
// names, goes to the worker ranked highest for it (rendezvous hashing)
// among those below their share: units/workers, rounded down, and one
// more for as many workers as the division leaves over. So the units
// spread evenly, and a worker that joins or leaves moves few of the
// others' units. workers must not be empty.
func assign(units, workers []string) map[string]string {
	units = slices.Sorted(slices.Values(units))
	share, over := len(units)/len(workers), len(units)%len(workers)
	load := make(map[string]int, len(workers))
	owners := make(map[string]string, len(units))
	for _, u := range units {
		best, bestRank := "", uint64(0)
		for _, w := range workers {
			if load[w] > share || load[w] == share && over == 0 {
				continue
			}
			r := rank(w, u)
			if best == "" || r > bestRank || r == bestRank && w < best {
				best, bestRank = w, r
			}
		}
		owners[u] = best
		if load[best]++; load[best] > share {
			over--
		}
	}
	return owners
}

// rank is the rendezvous hash of worker for unit.
func rank(worker, unit string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(worker + "/" + unit))
	return h.Sum64()
}

// owns implements jetstreamedge.Config.Owns: this worker owns the units
// assigned to it among the workers announced, and every unit that ended
// on a worker. A unit assigned elsewhere
// stays with it, while it pulls, for RebalanceDelay after it lost it, so
// that units do not move back and forth as workers come and go. A worker
// that leaves owns none, unless no other worker is left.
func (w *Worker) owns(consumer string, pulling bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	owner, ok := w.owners[consumer]
	if !ok {
		// Built after the last refresh.
		w.owners = assign(w.edges.Units(), w.live)
		owner = w.owners[consumer]
	}
	if w.leaving {
		return owner == w.self
	}
	if w.ended[consumer] {
		// Every copy takes the end of stream sent again, and ends.
		return true
	}
	if owner == w.self || !pulling {
		delete(w.lost, consumer)
		// A unit starts here only once its last holder let go of it: it
		// restores the checkpoint that holder committed last.
		return owner == w.self && (pulling || !w.heldElsewhere[consumer])
	}
	lost, ok := w.lost[consumer]
	if !ok {
		lost = time.Now()
		w.lost[consumer] = lost
	}
	return time.Since(lost) < w.cfg.RebalanceDelay
}

// Workers returns the workers this worker saw announced last, itself
// among them, as their keys in the announcement bucket.
func (w *Worker) Workers() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.live)
}

// Assigned returns the units assigned to this worker among the workers it
// saw announced last.
func (w *Worker) Assigned() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var units []string
	for u, owner := range w.owners {
		if owner == w.self {
			units = append(units, u)
		}
	}
	slices.Sort(units)
	return units
}

// rebalance reads the workers announced every refresh interval until ctx
// ends, assigns the units among them, and has the transport's inlets ask
// again whether they own their units.
func (w *Worker) rebalance(ctx context.Context) {
	ticker := time.NewTicker(w.refreshEvery())
	defer ticker.Stop()
	for {
		if err := w.refresh(ctx); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Warn("reading the workers failed", "worker", w.cfg.Worker, "err", err)
		}
		w.edges.Reassign()
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// refreshEvery is how often a worker reads the workers announced: often
// enough that a worker gone moves its units soon after its announcement
// expired, and that the RebalanceDelay is kept closely.
func (w *Worker) refreshEvery() time.Duration {
	d := w.cfg.LeaseTTL / 6
	if w.cfg.RebalanceDelay > 0 {
		d = min(d, w.cfg.RebalanceDelay/4)
	}
	return max(d, 50*time.Millisecond)
}

// refresh reads the workers announced, this one among them unless it
// leaves, and assigns the units among them.
func (w *Worker) refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	keys, err := w.workers.Keys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return err
	}
	ended, heldElsewhere := map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		var a Announcement
		if e, err := w.workers.Get(ctx, k); err == nil && json.Unmarshal(e.Value(), &a) == nil {
			for _, u := range a.Ended {
				ended[u] = true
			}
			if k != w.self {
				for _, u := range a.Held {
					heldElsewhere[u] = true
				}
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	live := w.members(keys, time.Now())
	if !slices.Equal(live, w.live) {
		w.cfg.Logger.Info("workers changed", "worker", w.cfg.Worker, "workers", live)
	}
	w.live, w.owners, w.ended, w.heldElsewhere = live, assign(w.edges.Units(), live), ended, heldElsewhere
	return nil
}

// members returns, sorted, the workers to assign among from the keys
// announced, read at now: this worker among them, unless it leaves and
// another is announced. A worker missing from keys stays for a third of
// the lease TTL after it was last read: right after a bucket's leader was
// elected, a read of the keys left out, for a second or two, workers
// whose announcements were renewed all along, and each worker, taking
// itself for alone, pulled for the others' units (copies of a window's
// lines in TestNATSNodeCutOff). A dead worker's units move that much
// later; its announcement expired a lease TTL after its last, and a
// worker cut off fenced itself off half a TTL before that. The caller
// holds w.mu.
func (w *Worker) members(keys []string, now time.Time) []string {
	live := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == w.self })
	if w.fence != nil && w.fence.up() {
		// A fenced worker's reads are no news of the others: it rejoins
		// with the workers it saw before, for as long again.
		for k := range w.seen {
			w.seen[k] = now
		}
	}
	for _, k := range live {
		w.seen[k] = now
	}
	for k, at := range w.seen {
		switch {
		case now.Sub(at) >= w.cfg.LeaseTTL/3:
			delete(w.seen, k)
		case !slices.Contains(live, k):
			live = append(live, k)
		}
	}
	if !w.leaving || len(live) == 0 {
		live = append(live, w.self)
	}
	slices.Sort(live)
	return live
}
