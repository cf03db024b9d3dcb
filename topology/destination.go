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
	if !errors.Is(err, operation.ErrRefused) {
		b.topo.cfg.Logger.Warn("destination failing: retrying", "component", b.name, "instance", b.index, "err", err)
	}
	for errors.Is(err, operation.ErrDestination) {
		switch {
		case errors.Is(err, operation.ErrRefused):
			b.gaveUp = fmt.Errorf("%w: bolt %s[%d]: %w", ErrGaveUp, b.name, b.index, err)
			return b.gaveUp
		case time.Duration(b.topo.wallNanos()-start) >= cfg.GiveUpAfter:
			b.gaveUp = fmt.Errorf("%w: bolt %s[%d] after %v: %w", ErrGaveUp, b.name, b.index, cfg.GiveUpAfter, err)
			return b.gaveUp
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
