package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/sensorstorm/sensorstorm/jetstreamedge"
)

// Defaults for Config.
const (
	DefaultLeaseTTL       = 10 * time.Second
	DefaultRebalanceDelay = 10 * time.Second
)

// Config configures a Worker.
type Config struct {
	// Pipeline names the pipeline; workers of the same pipeline share its
	// stream and buckets. Required.
	Pipeline string
	// Worker names this worker. Defaults to the host name and the
	// process id.
	Worker string
	// LeaseTTL is how long a source's lease, or a worker's announcement,
	// outlives its holder: the time a dead worker's sources and units
	// take to move. The holder renews a lease every third of it, an
	// announcement every sixth, and a worker that could not renew its
	// announcement for half of it fences itself off (Worker.Run).
	// Defaults to DefaultLeaseTTL.
	LeaseTTL time.Duration
	// RebalanceDelay is how long a worker keeps running a unit, or a
	// live source instance it leased, after it was assigned to another
	// worker, as workers joined or left: they move for balance only once
	// the workers stayed the same that long, so that a worker that comes
	// and goes does not move them back and forth. The units and leases
	// of a worker that died move at once, once its announcement or its
	// leases expired (LeaseTTL); those of a worker that leaves
	// (Worker.Leave) at once. Defaults to DefaultRebalanceDelay.
	RebalanceDelay time.Duration
	// Edges configures the transport; its Pipeline, Logger and Owns are
	// set from this Config. Its PinnedTTL is how long a unit waits for a
	// worker that stopped pulling without handing it over; it defaults to
	// LeaseTTL, which moves a dead worker's units no later (they move
	// once its announcement expired too), and lets no other worker
	// pulling for a unit get it pinned before its worker, cut off, fenced
	// itself off (half a TTL after its last announcement, with a pull
	// request of up to half the PinnedTTL under way).
	Edges jetstreamedge.Config
	// Logger receives the worker's logs. Defaults to discarding them.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Worker == "" {
		host, _ := os.Hostname()
		c.Worker = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.RebalanceDelay == 0 {
		c.RebalanceDelay = DefaultRebalanceDelay
	}
	if c.Edges.PinnedTTL == 0 {
		c.Edges.PinnedTTL = c.LeaseTTL
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Edges.Pipeline, c.Edges.Logger = c.Pipeline, c.Logger
}

// fenceAfter is how long after the last announcement the server
// confirmed a worker fences itself off: half the lease TTL, so that it
// stops acting as an owner a half TTL before the others can take its
// units and leases.
func (c *Config) fenceAfter() time.Duration { return c.LeaseTTL / 2 }

// announceEvery is how often a worker announces itself: three times
// within fenceAfter, so that one announcement lost or slow does not
// fence it off.
func (c *Config) announceEvery() time.Duration { return c.LeaseTTL / 6 }

// Validate reports the invalid fields.
func (c *Config) Validate() error {
	var errs []error
	if c.Pipeline == "" {
		errs = append(errs, errors.New("no pipeline name"))
	}
	if c.LeaseTTL < time.Second {
		errs = append(errs, fmt.Errorf("lease TTL %s under a second", c.LeaseTTL))
	}
	if c.RebalanceDelay < 0 {
		errs = append(errs, fmt.Errorf("negative rebalance delay %s", c.RebalanceDelay))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster: invalid config: %w", err)
	}
	return nil
}
