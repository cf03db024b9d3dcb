package topology

import (
	"sync/atomic"
	"time"
)

// backlog measures how long a bolt instance has had work waiting in its
// inbox or sync buffer: the time trees may have spent queued rather than
// lost. Its owner calls settle after every round; the acker reads total
// from another goroutine.
type backlog struct {
	done  atomic.Int64 // backlogged time up to since, in ns
	since atomic.Int64 // wall time the current backlog began; 0 when none
}

// settle records whether work is waiting at now.
func (b *backlog) settle(now int64, waiting bool) {
	if since := b.since.Load(); since != 0 {
		b.done.Add(now - since)
		b.since.Store(0)
	}
	if waiting {
		b.since.Store(now)
	}
}

// total is the backlogged time up to now.
func (b *backlog) total(now int64) time.Duration {
	d := b.done.Load()
	if since := b.since.Load(); since != 0 && now > since {
		d += now - since
	}
	return time.Duration(d)
}
