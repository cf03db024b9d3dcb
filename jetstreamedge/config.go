package jetstreamedge

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults for Config.
const (
	DefaultReplicas       = 1
	DefaultAckWait        = 30 * time.Second
	DefaultPinnedTTL      = 5 * time.Second
	DefaultMaxAckPending  = 1024
	DefaultMaxInFlight    = 256
	DefaultPublishTimeout = 10 * time.Second
	DefaultFetchBatch     = 64
	DefaultDedupWindow    = 1 << 18
)

// PriorityGroup is the priority group every worker pulls in; the server
// pins one worker per consumer.
const PriorityGroup = "workers"

// Config configures a Transport.
type Config struct {
	// Pipeline names the pipeline: its stream is StreamName(Pipeline), its
	// subjects start with SubjectPrefix(Pipeline). Required.
	Pipeline string `yaml:"pipeline"`
	// Replicas is the stream's replication factor: 3 on a 3-node
	// cluster keeps every message through the loss of a node. Defaults
	// to DefaultReplicas.
	Replicas int `yaml:"replicas"`
	// AckWait is how long the server waits for the acknowledgement of a
	// message before it delivers it again. Messages held by windows are
	// kept alive with in-progress acknowledgements every third of it.
	// Defaults to DefaultAckWait.
	AckWait time.Duration `yaml:"ack_wait"`
	// PinnedTTL is how long a worker that stopped pulling keeps its
	// consumers pinned before the server gives them to another worker:
	// the time a dead worker's units take to move. Defaults to
	// DefaultPinnedTTL.
	PinnedTTL time.Duration `yaml:"pinned_ttl"`
	// MaxAckPending bounds the unacknowledged messages per consumer: the
	// memory a downstream instance may hold. Defaults to
	// DefaultMaxAckPending.
	MaxAckPending int `yaml:"max_ack_pending"`
	// MaxInFlight bounds the messages published and not yet confirmed,
	// over all outlets: Send blocks beyond it. Defaults to
	// DefaultMaxInFlight.
	MaxInFlight int `yaml:"max_in_flight"`
	// PublishTimeout fails a publish the server did not confirm in time;
	// the particles in it fail and are replayed. Defaults to
	// DefaultPublishTimeout.
	PublishTimeout time.Duration `yaml:"publish_timeout"`
	// FetchBatch is how many messages a consumer asks for at once.
	// Defaults to DefaultFetchBatch.
	FetchBatch int `yaml:"fetch_batch"`
	// DedupWindow is how many particle identities an inlet remembers to
	// drop redelivered copies. Defaults to DefaultDedupWindow.
	DedupWindow int `yaml:"dedup_window"`
	// Owns, if set, tells whether this worker should run the unit of a
	// consumer now; pulling tells whether its inlet pulls for the unit,
	// so that an owner may let a worker keep a unit for a while after
	// assigning it elsewhere. An inlet pulls only while its worker owns
	// the unit, so that the server pins the unit to its owner; it asks
	// again at every Transport.Reassign, and hands a unit it no longer
	// owns over (see Transport.Reassign). Defaults to owning every unit:
	// every worker pulls, the server pins one.
	Owns func(consumer string, pulling bool) bool `yaml:"-"`
	// Logger receives the transport's logs. Defaults to discarding them.
	Logger *slog.Logger `yaml:"-"`
}

func (c *Config) setDefaults() {
	if c.Replicas == 0 {
		c.Replicas = DefaultReplicas
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.PinnedTTL == 0 {
		c.PinnedTTL = DefaultPinnedTTL
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = DefaultMaxAckPending
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.FetchBatch == 0 {
		c.FetchBatch = DefaultFetchBatch
	}
	if c.DedupWindow == 0 {
		c.DedupWindow = DefaultDedupWindow
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports the invalid fields.
func (c *Config) Validate() error {
	var errs []error
	if c.Pipeline == "" {
		errs = append(errs, errors.New("no pipeline name"))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("replicas %d not in [1, 5]", c.Replicas))
	}
	if c.AckWait < time.Second || c.PinnedTTL < 0 || c.PublishTimeout < 0 {
		errs = append(errs, errors.New("ack wait under a second, or a negative timeout"))
	}
	if c.MaxAckPending < 1 || c.MaxInFlight < 1 || c.FetchBatch < 1 || c.DedupWindow < 1 {
		errs = append(errs, errors.New("max ack pending, max in flight, fetch batch and dedup window must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("jetstreamedge: invalid config: %w", err)
	}
	return nil
}
