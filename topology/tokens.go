package topology

import (
	"context"
	"sync"
	"sync/atomic"
)

// tokens counts a source instance's pending trees against its max
// pending. Taking and giving back a token is one atomic add, as cheap as
// the acking it bounds; only a source at its limit waits, on wake.
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

// tryTake takes a token if one is free.
func (t *tokens) tryTake() bool {
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
	if t.tryTake() {
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
		if t.tryTake() {
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
