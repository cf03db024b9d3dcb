package topology

import (
	"errors"
	"fmt"
	"github.com/sensorstorm/sensorstorm/checkpoint"
	"log/slog"
	"time"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// Defaults for Config.
const (
	DefaultBatchSize            = 256
	DefaultInboxSize            = 4
	DefaultHousekeepingInterval = 100 * time.Millisecond
	DefaultDrainTimeout         = 30 * time.Second
	DefaultMaxPending           = 1 << 14
	DefaultMaxAttempts          = 3
	DefaultRetryInitialInterval = 100 * time.Millisecond
	DefaultRetryMaxInterval     = 10 * time.Second
	DefaultGiveUpAfter          = 5 * time.Minute
)

// Config configures a Topology. The zero Config is valid: every field has a
// default.
type Config struct {
	// BatchSize is how many particles travel together from one instance to
	// another. Defaults to DefaultBatchSize.
	BatchSize int `yaml:"batch_size"`
	// InboxSize is how many batches a bolt instance's inbox holds before
	// senders block. Defaults to DefaultInboxSize.
	InboxSize int `yaml:"inbox_size"`
	// HousekeepingInterval is the wall time between checks for idle inputs,
	// due timers and timed-out trees. Defaults to
	// DefaultHousekeepingInterval.
	HousekeepingInterval time.Duration `yaml:"housekeeping_interval"`
	// DrainTimeout bounds how long Run drains after its context is
	// cancelled before it abandons what is left. Defaults to
	// DefaultDrainTimeout.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// Replay says that the sources replay recordings, so that the output
	// must be a function of the data: inputs are never idle (a recording's
	// silences hold the watermark back as they are, and every instance
	// forwards its progress), and far-future timestamps are left to the
	// sources, which judge them against the recording (connectors/replay
	// does).
	Replay bool `yaml:"replay"`
	// TickInterval is the stream time between the metaparticle.Tick (in
	// the stream-time domain) that the engine hands to every bolt
	// instance's operation. Zero sends none.
	TickInterval time.Duration `yaml:"tick_interval"`
	// Acking configures guaranteed processing.
	Acking AckingConfig `yaml:"acking"`
	// Destination configures the retries of a failing destination.
	Destination DestinationConfig `yaml:"destination"`
	// Checkpoints configures checkpoints; off without a Store.
	Checkpoints CheckpointConfig `yaml:"checkpoints"`

	// Clock is the run's stream clock, read by every instance. Defaults to
	// the wall clock for a live run and, with Replay, to the sources'
	// position: the newest event time they have handed on. A replay
	// source that paces itself is its run's clock (connectors/replay).
	Clock streamclock.Clock `yaml:"-"`
	// Wall is the wall clock. Defaults to the system clock.
	Wall streamclock.Wall `yaml:"-"`
	// Logger receives the engine's logs. Defaults to discarding them.
	Logger *slog.Logger `yaml:"-"`
	// DeadLetters receives bad input, late particles dropped by policy and
	// trees that failed for good. Defaults to counting them only.
	DeadLetters DeadLetterSink `yaml:"-"`
	// Incarnation tells this process's run apart from the runs of the
	// same topology in other processes. A particle a bolt instance derives
	// from an input takes an identity that is a function of its parent's,
	// the same in every process, so that receivers drop the copies an
	// instance that moved derives again; one it makes without a parent (on
	// a timer or a watermark, no anchor held) is numbered from
	// Incarnation<<32, so that it never takes the identity of one made
	// before in another process, which receivers would drop as a copy.
	// Sources number alike in every process: a recording replayed again
	// gives its particles their identities again. Defaults to 0.
	Incarnation uint32 `yaml:"-"`
	// Transport carries edges into bolt instances across processes; nil
	// keeps every edge in process. It needs Acking.Enabled. With one,
	// cancelling Run's context abandons this process's share of the run
	// to the others instead of draining it: see Transport.
	Transport edge.Transport `yaml:"-"`
}

// DestinationConfig configures how a bolt instance retries a call of its
// operation that failed with operation.ErrDestination: the same call again,
// after an exponential backoff, taking no other input meanwhile.
type DestinationConfig struct {
	// InitialInterval and MaxInterval bound the backoff between attempts.
	// Default to DefaultRetryInitialInterval and DefaultRetryMaxInterval.
	InitialInterval time.Duration `yaml:"initial_interval"`
	MaxInterval     time.Duration `yaml:"max_interval"`
	// GiveUpAfter is how long a destination may fail before the run stops
	// with ErrGaveUp. Defaults to DefaultGiveUpAfter.
	GiveUpAfter time.Duration `yaml:"give_up_after"`
}

// AckingConfig configures the XOR acker and the retry of failed trees.
type AckingConfig struct {
	// Enabled turns tracking of data particles on.
	Enabled bool `yaml:"enabled"`
	// MaxPending bounds the trees a source instance has pending: Emit
	// blocks beyond it. Particles held in sync buffers and windows keep
	// their trees pending, so it must exceed what a window holds, or the
	// source waits for trees that only the hard timeout ends. Defaults to
	// DefaultMaxPending.
	MaxPending int `yaml:"max_pending"`
	// ProgressTimeout fails a tree that made no progress for this long.
	// Both timeouts count only time during which no bolt instance had work
	// waiting (busy, or batches in its inbox), so that trees queued under
	// backpressure never time out. Defaults to twice the longest time a
	// particle may wait in a sync buffer (its window, plus the idle timeout
	// live), at least the acker's default.
	ProgressTimeout time.Duration `yaml:"progress_timeout"`
	// HardTimeout fails a tree older than this, progress or not. Defaults
	// to twice the longest time a bolt holds its inputs (buffer wait plus
	// an operation's operation.Spanner span, a window's size) plus a
	// minute, at least the acker's default.
	HardTimeout time.Duration `yaml:"hard_timeout"`
	// MaxAttempts is how often a particle is emitted before a failure is
	// final and it goes to the dead-letter sink. Defaults to
	// DefaultMaxAttempts; 1 means no retry.
	MaxAttempts int `yaml:"max_attempts"`
	// RetryInitialInterval and RetryMaxInterval bound the exponential
	// backoff between attempts. Default to DefaultRetryInitialInterval and
	// DefaultRetryMaxInterval.
	RetryInitialInterval time.Duration `yaml:"retry_initial_interval"`
	RetryMaxInterval     time.Duration `yaml:"retry_max_interval"`
}

func (c *Config) setDefaults() {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.InboxSize == 0 {
		c.InboxSize = DefaultInboxSize
	}
	if c.HousekeepingInterval == 0 {
		c.HousekeepingInterval = DefaultHousekeepingInterval
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.Wall == nil {
		c.Wall = streamclock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	d := &c.Destination
	if d.InitialInterval == 0 {
		d.InitialInterval = DefaultRetryInitialInterval
	}
	if d.MaxInterval == 0 {
		d.MaxInterval = DefaultRetryMaxInterval
	}
	if d.GiveUpAfter == 0 {
		d.GiveUpAfter = DefaultGiveUpAfter
	}
	a := &c.Acking
	if a.MaxPending == 0 {
		a.MaxPending = DefaultMaxPending
	}
	if a.MaxAttempts == 0 {
		a.MaxAttempts = DefaultMaxAttempts
	}
	if a.RetryInitialInterval == 0 {
		a.RetryInitialInterval = DefaultRetryInitialInterval
	}
	if a.RetryMaxInterval == 0 {
		a.RetryMaxInterval = DefaultRetryMaxInterval
	}
}

// Validate reports every invalid field of c with its defaults applied, as
// New applies them, joined; c itself is left as it is. The zero Config is
// valid.
func (c *Config) Validate() error {
	d := *c
	d.setDefaults()
	c = &d
	var errs []error
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("batch size %d < 1", c.BatchSize))
	}
	if c.InboxSize < 1 {
		errs = append(errs, fmt.Errorf("inbox size %d < 1", c.InboxSize))
	}
	if c.HousekeepingInterval < 0 || c.DrainTimeout < 0 {
		errs = append(errs, errors.New("negative interval"))
	}
	if c.TickInterval < 0 {
		errs = append(errs, errors.New("negative tick interval"))
	}
	if c.Transport != nil && !c.Acking.Enabled {
		errs = append(errs, errors.New("a transport needs acking: delivery across processes is acknowledged hop by hop"))
	}
	if _, ok := c.Checkpoints.Store.(checkpoint.Partitioned); c.Transport != nil && c.Checkpoints.Store != nil && !ok {
		errs = append(errs, fmt.Errorf("checkpoints with a transport need a checkpoint.Partitioned store, not %T: every unit checkpoints apart", c.Checkpoints.Store))
	}
	if c.Checkpoints.Interval < 0 {
		errs = append(errs, errors.New("negative checkpoint interval"))
	}
	if c.Acking.MaxPending < 1 || c.Acking.MaxAttempts < 1 {
		errs = append(errs, errors.New("acking: max pending and max attempts must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("topology: invalid config: %w", err)
	}
	return nil
}

func (a *AckingConfig) table(capacity int) acker.Config {
	return acker.Config{Capacity: capacity, ProgressTimeout: a.ProgressTimeout, HardTimeout: a.HardTimeout}
}

// BoltConfig configures one bolt.
type BoltConfig struct {
	// Parallelism is the number of instances. Defaults to 1.
	Parallelism int `yaml:"parallelism"`
	// Buffer configures the synchronization buffer in front of every
	// instance: window, idle timeout, future bound, capacity and late
	// policy. With Config.Replay, the idle timeout and the future bound do
	// not apply.
	Buffer syncbuffer.Config `yaml:"buffer"`
}

// SourceConfig configures one source.
type SourceConfig struct {
	// Parallelism is the number of instances. Defaults to 1.
	Parallelism int `yaml:"parallelism"`
	// FutureBound is how far ahead of the stream clock a particle's event
	// time may be in a live run before the source rejects it as invalid
	// (counted and dead-lettered, acknowledged as bad input), so that a
	// sensor with a broken clock never becomes the stream's high-water
	// mark. Negative disables it. A replay leaves the judgement to its
	// sources, which know the recording. Defaults to
	// syncbuffer.DefaultFutureBound.
	FutureBound time.Duration `yaml:"future_bound"`
}
