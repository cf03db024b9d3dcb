package topology

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/sensorstorm/sensorstorm/operation"
)

// attempt runs fn, a callback of the instance's operation, and while it
// fails with operation.ErrDestination runs it again after an exponential
// backoff: the failure is the destination's, not the data's, so the same
// call is retried where it failed, and the instance takes no other input
// meanwhile, which holds its upstream back. Once the destination has
// failed for Config.Destination.GiveUpAfter, attempt sets b.gaveUp and
// returns it; the instance then stops without acknowledging or failing
// anything more. A destination that refuses for good
// (operation.ErrRefused) is given up on at once.
func (b *boltInstance) attempt(ctx context.Context, fn func() error) error {
	err := b.call(fn)
	if !errors.Is(err, operation.ErrDestination) {
		return err
	}
	cfg := b.topo.cfg.Destination
	bo := backoff.ExponentialBackOff{
		InitialInterval:     cfg.InitialInterval,
		RandomizationFactor: backoff.DefaultRandomizationFactor,
		Multiplier:          backoff.DefaultMultiplier,
		MaxInterval:         cfg.MaxInterval,
	}
	bo.Reset()
	start := b.topo.wallNanos()
	defer b.failing.Store(nil)
	if !errors.Is(err, operation.ErrRefused) {
		// Loud at the first failure, then again at a backoff of its own,
		// so that a failure that lasts is seen however long it lasts.
		b.topo.cfg.Logger.Error("destination failing: retrying", "component", b.name, "instance", b.index, "err", err)
	}
	nextLog := failingLogFirst
	for attempts := 1; errors.Is(err, operation.ErrDestination); attempts++ {
		elapsed := time.Duration(b.topo.wallNanos() - start)
		b.failing.Store(&destinationFailure{failedFor: elapsed, err: err})
		if errors.Is(err, operation.ErrRefused) {
			b.gaveUp = fmt.Errorf("%w: bolt %s[%d]: %w", ErrGaveUp, b.name, b.index, err)
			return b.gaveUp
		}
		if elapsed >= cfg.GiveUpAfter {
			b.gaveUp = fmt.Errorf("%w: bolt %s[%d] after %v: %w", ErrGaveUp, b.name, b.index, cfg.GiveUpAfter, err)
			return b.gaveUp
		}
		if elapsed >= nextLog {
			b.topo.cfg.Logger.Error("destination still failing: retrying", "component", b.name, "instance", b.index,
				"for", elapsed.Round(time.Millisecond), "attempts", attempts, "err", err)
			nextLog = min(2*nextLog, elapsed+failingLogMax)
		}
		b.stats.DestinationRetries.Add(1)
		// Waiting for the destination is work waiting, not a lost tree.
		b.settleBacklog(true)
		if err := b.sleep(ctx, bo.NextBackOff()); err != nil {
			return err
		}
		err = b.call(fn)
	}
	b.topo.cfg.Logger.Info("destination recovered", "component", b.name, "instance", b.index,
		"after", time.Duration(b.topo.wallNanos()-start))
	return err
}

// The backoff of the logs of a failing destination: the second comes
// after failingLogFirst, the next ones at double the time, at most
// failingLogMax apart.
const (
	failingLogFirst = 5 * time.Second
	failingLogMax   = time.Minute
)

// destinationFailure is what an instance retrying a failing destination
// reports when a drain times out.
type destinationFailure struct {
	failedFor time.Duration // how long it has failed
	err       error
}

// failingDestinations returns, for each instance of r retrying a failing
// destination, an error saying so, for the error of a drain that timed
// out: the destination's failure is what it waited for.
func (r *run) failingDestinations() []error {
	var errs []error
	for _, b := range r.bolts {
		if f := b.failing.Load(); f != nil {
			errs = append(errs, fmt.Errorf("bolt %s[%d]: destination failing for %v: %w", b.name, b.index, f.failedFor.Round(time.Millisecond), f.err))
		}
	}
	return errs
}

// sleep waits d on the wall clock, or until ctx ends.
func (b *boltInstance) sleep(ctx context.Context, d time.Duration) error {
	c, stop := b.topo.cfg.Wall.NewTicker(d)
	defer stop()
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
