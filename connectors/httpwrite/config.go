package httpwrite

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sensorstorm/sensorstorm/httpguard"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
)

// Defaults for Config.
const (
	// DefaultAddr is InfluxDB's own address, on the loopback interface
	// only.
	DefaultAddr = "localhost:8086"
	// DefaultMaxBodySize bounds a request body, after decompression:
	// 32 MiB, above InfluxDB's 25 MB.
	DefaultMaxBodySize = 32 << 20
	// DefaultMaxInFlightBytes bounds the bytes of the bodies being
	// received and spooled, and those of the backlog held in memory.
	DefaultMaxInFlightBytes = 256 << 20
	// DefaultRetryAfter is the least a 503 tells a client to wait.
	DefaultRetryAfter = time.Second
	// DefaultShutdownTimeout bounds how long Run waits, once its context
	// ends, for the requests being handled.
	DefaultShutdownTimeout = 10 * time.Second
)

// Config configures a Source. StateDir is required; the rest has
// defaults.
type Config struct {
	// Addr is the TCP address to listen on, host:port. Defaults to
	// DefaultAddr.
	Addr string `yaml:"addr"`
	// StateDir is the directory of the spool that makes a body durable
	// before the write is answered. Required.
	StateDir string `yaml:"state_dir"`
	// Spool configures the spool. Defaults to spool's defaults.
	Spool spool.Config `yaml:"spool"`
	// Token, when set, is required of every write: as "Authorization:
	// Token <token>" (or Bearer), and for the 1.x API also as the
	// password of Basic authentication or of the p query parameter, as
	// InfluxDB 2 takes it. Defaults to "", no authentication.
	Token string `yaml:"token"`
	// MaxBodySize is the largest request body in bytes, after gzip
	// decompression; a larger one is answered 413. Defaults to
	// DefaultMaxBodySize.
	MaxBodySize int64 `yaml:"max_body_size"`
	// MaxInFlightBytes bounds the memory of the bodies being received,
	// decoded and spooled: a body counts its bytes as sent and, for
	// gzip, also inflated, taken as they are read and decoded, and gives
	// them back once durable. Beyond it, a write is answered 503 with
	// Retry-After. A body is always taken while it is the only one in
	// flight. It is also the memory bound of the backlog: the bodies
	// durable beyond it wait on disk only, read back when the pipeline
	// gets to them. How far the pipeline is behind does not count here;
	// Backlog bounds that. Defaults to DefaultMaxInFlightBytes.
	MaxInFlightBytes int64 `yaml:"max_in_flight_bytes"`
	// Backlog bounds the bodies waiting in the spool for the pipeline:
	// its disk quota (max_backlog_bytes) and the free space kept for the
	// system (min_free_bytes). At the quota writes are answered 503, and
	// the source says so at error level. Defaults to spool's defaults.
	Backlog spool.BacklogConfig `yaml:"backlog"`
	// RetryAfter is the least wait a 503 asks of the client, in whole
	// seconds (at least one); at the disk quota it asks the time the
	// pipeline takes to make room for the body, up to a minute.
	// Defaults to DefaultRetryAfter.
	RetryAfter time.Duration `yaml:"retry_after"`
	// FutureBound is how far after the time a write was received a
	// line's timestamp may be. A line beyond it is a bad line of the
	// write, named in its 400 answer and dead-lettered, never answered
	// 204 and dropped later: run the topology's source with the same
	// future bound (topology.SourceConfig.FutureBound), which the
	// pipeline builder does. Negative disables it. Defaults to
	// syncbuffer.DefaultFutureBound, the topology's.
	FutureBound time.Duration `yaml:"future_bound"`
	// Limits bounds what clients may hold: the time to send a request's
	// header and body, an idle connection's life, the connections served
	// at a time. Defaults to httpguard's defaults.
	Limits httpguard.Limits `yaml:",inline"`
	// ShutdownTimeout bounds how long Run waits, after its context
	// ended, for the requests being handled before it closes their
	// connections. Defaults to DefaultShutdownTimeout.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// Logger receives the listening address and server errors. Defaults
	// to discarding them.
	Logger *slog.Logger `yaml:"-"`
	// Wall is the wall clock: a line without a timestamp takes the time
	// the write was received, truncated to the write's precision, as
	// InfluxDB gives it the server's; FutureBound counts from it.
	// Defaults to the system clock.
	Wall streamclock.Wall `yaml:"-"`
	// Checkpoints says that the run takes checkpoints: a body leaves the
	// spool once a checkpoint holding it completes, not when its
	// particles are acknowledged, and a restored run resumes from the
	// checkpoint's position (see Source.Position). Set by the pipeline
	// that takes them.
	Checkpoints bool `yaml:"-"`
}

func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.MaxBodySize == 0 {
		c.MaxBodySize = DefaultMaxBodySize
	}
	if c.MaxInFlightBytes == 0 {
		c.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if c.RetryAfter == 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.FutureBound == 0 {
		c.FutureBound = syncbuffer.DefaultFutureBound
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Wall == nil {
		c.Wall = streamclock.System{}
	}
}

// Validate reports a missing state directory and negative limits.
func (c *Config) Validate() error {
	var errs []error
	if c.StateDir == "" {
		errs = append(errs, errors.New("no state_dir: the spool's directory is required"))
	}
	if c.MaxBodySize < 0 {
		errs = append(errs, fmt.Errorf("max_body_size %d < 0", c.MaxBodySize))
	}
	if c.MaxInFlightBytes < 0 {
		errs = append(errs, fmt.Errorf("max_in_flight_bytes %d < 0", c.MaxInFlightBytes))
	}
	if c.Backlog.MaxBytes < 0 || c.Backlog.MinFree < 0 {
		errs = append(errs, errors.New("negative max_backlog_bytes or min_free_bytes"))
	}
	if c.RetryAfter < 0 || c.ShutdownTimeout < 0 {
		errs = append(errs, errors.New("negative retry_after or shutdown_timeout"))
	}
	if err := c.Limits.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Spool.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("httpwrite: invalid config: %w", err)
	}
	return nil
}
