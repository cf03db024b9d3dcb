package cluster

import (
	"sync"
	"time"
)

// fenceClock decides when a worker fences itself off: the other workers
// take its units once its announcement expired, a lease TTL after the
// server stored it, and its source leases likewise, so a worker that has
// not renewed its announcement for a part of the TTL (after) must stop
// acting as their owner before anyone else can take them. It measures on
// its own monotonic clock from the start of the last announcement the
// server confirmed, which the server stored later: the TTL runs out no
// earlier than a TTL after that start.
type fenceClock struct {
	after time.Duration
	now   func() time.Time

	mu sync.Mutex // guards what follows
	// contact is when the last announcement confirmed was sent.
	contact time.Time
	fenced  bool
}

func newFenceClock(after time.Duration, now func() time.Time) *fenceClock {
	return &fenceClock{after: after, now: now, contact: now()}
}

// renewed records that an announcement sent at sent was confirmed, and
// reports whether that lifts the fence: only a recent one does (sent less
// than after ago), which keeps the worker announced for a while yet; one
// that was sent before a long silence may have expired already.
func (f *fenceClock) renewed(sent time.Time) (lifted bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sent.After(f.contact) {
		f.contact = sent
	}
	if f.fenced && f.now().Sub(f.contact) < f.after {
		f.fenced = false
		return true
	}
	return false
}

// check reports whether the fence must rise now: the last announcement
// confirmed was sent after ago or longer.
func (f *fenceClock) check() (raised bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.fenced && f.now().Sub(f.contact) >= f.after {
		f.fenced = true
		return true
	}
	return false
}

// up reports whether the fence is up.
func (f *fenceClock) up() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fenced
}
