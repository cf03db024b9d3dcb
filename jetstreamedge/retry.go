package jetstreamedge

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Bounds of the backoff between attempts at something the server did not
// answer.
const (
	retryMin = 50 * time.Millisecond
	retryMax = time.Second
)

// backoff doubles the wait between attempts from min up to max.
type backoff struct {
	min, max time.Duration
	next     time.Duration
}

// wait sleeps before the next attempt, or returns ctx's error.
func (b *backoff) wait(ctx context.Context) error {
	b.next = min(max(2*b.next, b.min), b.max)
	timer := time.NewTimer(b.next)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// transient tells whether an error of a JetStream request may go away
// when tried again: anything but the server refusing the request itself
// (a 4xx code other than a timeout) and the caller's cancellation.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code < 400 || apiErr.Code >= 500 || apiErr.Code == 408
	}
	return true
}

// retry calls fn until it succeeds, fails with an error that is not
// transient, or ctx ends, logging each failure it tries again after.
func retry(ctx context.Context, log *slog.Logger, what string, fn func() error) error {
	b := backoff{min: retryMin, max: retryMax}
	for {
		err := fn()
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		log.Warn(what+" failed: trying again", "err", err)
		if b.wait(ctx) != nil {
			return err
		}
	}
}
