// Package jsretry tries JetStream requests again while the server cannot
// answer them: a stream's or bucket's leader being elected, a node away, a
// connection being restored. Such errors go away by themselves within
// seconds, and a worker that gave up on them would stop for nothing.
//
// # What it is not
//
// Not a circuit breaker and not a give-up policy: Do tries until the
// request succeeds, fails for good or its context ends; the caller's
// context bounds it.
package jsretry

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Bounds of the backoff between attempts.
const (
	minWait = 50 * time.Millisecond
	maxWait = time.Second
)

// Backoff doubles the wait between attempts from 50 ms up to a second.
// Its zero value is ready to use.
type Backoff struct {
	next time.Duration
}

// Wait sleeps before the next attempt, or returns ctx's error.
func (b *Backoff) Wait(ctx context.Context) error {
	b.next = min(max(2*b.next, minWait), maxWait)
	timer := time.NewTimer(b.next)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// Reset starts the waits from the shortest again, after a success.
func (b *Backoff) Reset() { b.next = 0 }

// Transient tells whether an error of a JetStream request may go away
// when tried again: anything but the server refusing the request itself
// (a 4xx code other than a timeout) and the caller's cancellation.
func Transient(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code < 400 || apiErr.Code >= 500 || apiErr.Code == 408
	}
	return true
}

// Do calls fn until it succeeds, fails with an error that is not
// Transient, or ctx ends, logging each failure it tries again after as
// what failed.
func Do(ctx context.Context, log *slog.Logger, what string, fn func() error) error {
	var b Backoff
	for {
		err := fn()
		if err == nil || !Transient(err) || ctx.Err() != nil {
			return err
		}
		log.Warn(what+" failed: trying again", "err", err)
		if b.Wait(ctx) != nil {
			return err
		}
	}
}
