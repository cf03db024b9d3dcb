package streamclock

import (
	"sync"
	"time"
)

// Wall is a source of wall-clock time and of tickers on it.
type Wall interface {
	Now() time.Time
	// NewTicker returns a channel that receives the time every d, and a
	// function that stops the ticker.
	NewTicker(d time.Duration) (<-chan time.Time, func())
}

// System is the machine's wall clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// NewTicker returns a time.Ticker's channel and its Stop.
func (System) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// Fake is a wall clock that only moves when told to. It is safe for
// concurrent use. The zero Fake stands at the Unix epoch.
//
// Its tickers fire during Advance, once per call at most (like a
// time.Ticker, they drop ticks for a slow receiver).
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*fakeTicker
}

type fakeTicker struct {
	c       chan time.Time
	every   time.Duration
	next    time.Time
	stopped bool
}

// NewTicker returns a ticker that fires as Advance moves the fake past
// multiples of d.
func (f *Fake) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTicker{c: make(chan time.Time, 1), every: d, next: f.nowLocked().Add(d)}
	f.tickers = append(f.tickers, t)
	return t.c, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		t.stopped = true
	}
}

// NewFake returns a Fake standing at t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake's current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nowLocked()
}

func (f *Fake) nowLocked() time.Time {
	if f.now.IsZero() {
		f.now = time.Unix(0, 0)
	}
	return f.now
}

// Advance moves the fake forward by d and fires the tickers that are due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.nowLocked().Add(d)
	live := f.tickers[:0]
	for _, t := range f.tickers {
		if t.stopped {
			continue
		}
		live = append(live, t)
		if f.now.Before(t.next) {
			continue
		}
		for !f.now.Before(t.next) {
			t.next = t.next.Add(t.every)
		}
		select {
		case t.c <- f.now:
		default:
		}
	}
	f.tickers = live
}
