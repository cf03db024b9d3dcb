package topology

import (
	"sync"
	"time"
)

// backlog measures how long a bolt instance has had work waiting in its
// inbox or sync buffer: the time trees may have spent queued rather than
// lost. Its owner closes the running backlog after every round and marks a
// new one when work is left; senders mark one when they deliver, so that a
// batch that arrives while the owner is not looking counts from then. The
// acker reads total from another goroutine.
//
// A mutex, not two atomics: a reader between the owner's taking since and
// its adding to done would miss the whole running backlog, and the acker
// would time out trees that waited in it.
type backlog struct {
	mu    sync.Mutex
	done  int64 // backlogged time up to since, in ns
	since int64 // wall time the current backlog began; 0 when none
}

// close ends the current backlog at now.
func (b *backlog) close(now int64) {
	b.mu.Lock()
	if b.since != 0 && now > b.since {
		b.done += now - b.since
	}
	b.since = 0
	b.mu.Unlock()
}

// mark starts a backlog at now, unless one is running. The owner calls it
// after close, once it has looked at what waits: a sender's mark in
// between is kept.
func (b *backlog) mark(now int64) {
	b.mu.Lock()
	if b.since == 0 {
		b.since = now
	}
	b.mu.Unlock()
}

// total is the backlogged time up to now.
func (b *backlog) total(now int64) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.done
	if b.since != 0 && now > b.since {
		d += now - b.since
	}
	return time.Duration(d)
}
