package topology

import (
	"sync/atomic"
	"time"
)

// backlog measures how long a bolt instance has had work waiting in its
// inbox or sync buffer: the time trees may have spent queued rather than
// lost. Its owner closes the running backlog after every round and marks a
// new one when work is left; senders mark one when they deliver, so that a
// batch that arrives while the owner is not looking counts from then. The
// acker reads total from another goroutine.
type backlog struct {
	done  atomic.Int64 // backlogged time up to since, in ns
	since atomic.Int64 // wall time the current backlog began; 0 when none
}

// close ends the current backlog at now.
func (b *backlog) close(now int64) {
	if since := b.since.Swap(0); since != 0 && now > since {
		b.done.Add(now - since)
	}
}

// mark starts a backlog at now, unless one is running. The owner calls it
// after close, once it has looked at what waits: a sender's mark in
// between is kept.
func (b *backlog) mark(now int64) {
	b.since.CompareAndSwap(0, now)
}

// total is the backlogged time up to now.
func (b *backlog) total(now int64) time.Duration {
	d := b.done.Load()
	if since := b.since.Load(); since != 0 && now > since {
		d += now - since
	}
	return time.Duration(d)
}
