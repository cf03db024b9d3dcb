package topology

import (
	"context"
	"sync"
	"sync/atomic"
)

// tokens counts a source instance's pending trees against its max
// pending. Taking and giving back tokens is one atomic add, as cheap as
// the acking it bounds, and a source takes them ahead in batches
// (tryTakeUpTo); only a source at its limit waits, on wake.
type tokens struct {
	taken   atomic.Int64
	max     int64
	takeMu  sync.Mutex // one taker at a time, so that one wake suffices
	waiting atomic.Bool
	wake    chan struct{}
}

func newTokens(max int) *tokens {
	return &tokens{max: int64(max), wake: make(chan struct{}, 1)}
}

// tryTakeUpTo takes up to n tokens, as many as are free, and returns how
// many it took.
func (t *tokens) tryTakeUpTo(n int) int {
	after := t.taken.Add(int64(n))
	if after <= t.max {
		return n
	}
	over := int(min(after-t.max, int64(n)))
	t.give(over)
	return n - over
}

// tryTake takes a token if one is free, for a taker that is not the
// waiter. A failed attempt held a token for a moment, which the waiter
// may have missed: it is given back like any other, waking the waiter.
func (t *tokens) tryTake() bool {
	if t.taken.Add(1) <= t.max {
		return true
	}
	t.give(1)
	return false
}

// grab takes a token if one is free, for the one taker that may wait: it
// gives back a failed attempt without waking itself.
func (t *tokens) grab() bool {
	if t.taken.Add(1) <= t.max {
		return true
	}
	t.taken.Add(-1)
	return false
}

// take waits for a token until ctx ends. blocked is called, once, before
// it waits.
func (t *tokens) take(ctx context.Context, blocked func() error) error {
	// A free token needs no lock: only waiters must be one at a time.
	if t.tryTake() {
		return nil
	}
	t.takeMu.Lock()
	defer t.takeMu.Unlock()
	if t.grab() {
		return nil
	}
	if err := blocked(); err != nil {
		return err
	}
	for {
		// A giver that returns its token after the check below sees
		// waiting and wakes us; one that returned it before, the check
		// sees.
		t.waiting.Store(true)
		if t.grab() {
			t.waiting.Store(false)
			return nil
		}
		select {
		case <-t.wake:
		case <-ctx.Done():
			t.waiting.Store(false)
			return ctx.Err()
		}
	}
}

// give returns n tokens.
func (t *tokens) give(n int) {
	t.taken.Add(-int64(n))
	// The load first: a compare-and-swap on every give costs as much as
	// the rest of acking a tree, and a taker rarely waits.
	if t.waiting.Load() && t.waiting.CompareAndSwap(true, false) {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// outstanding is the number of tokens taken.
func (t *tokens) outstanding() int { return int(max(t.taken.Load(), 0)) }
