package syncbuffer

import (
	"fmt"
	"time"
)

const (
	// DefaultIdleTimeout is the least default [Config.IdleTimeout]; a
	// longer window raises it to the window, up to MaxDefaultIdleTimeout.
	DefaultIdleTimeout = 2 * time.Second

	// MaxDefaultIdleTimeout bounds the default [Config.IdleTimeout] of a
	// long window.
	MaxDefaultIdleTimeout = 30 * time.Second

	// DefaultFutureBound is the default [Config.FutureBound].
	DefaultFutureBound = time.Hour

	// DefaultMetaRetention is the least default [Config.MetaRetention]; a
	// longer window raises it to the window.
	DefaultMetaRetention = time.Minute

	// DefaultCapacity is the default [Config.Capacity].
	DefaultCapacity = 1 << 22

	// DefaultCapacityBytes is the default [Config.CapacityBytes].
	DefaultCapacityBytes = 1 << 30
)

// Config configures a [Buffer]. The zero value is valid and gets the
// defaults stated on each field.
type Config struct {
	// Window is the bounded out-of-orderness: how far behind its own
	// input's high-water mark an item may be and still be released in
	// order. Defaults to 0, which still merges the inputs in order.
	Window time.Duration `yaml:"window"`

	// IdleTimeout is the stream-clock time after which an input that shows
	// no sign of life stops holding the watermark back. Negative disables
	// it: a silent input then holds the watermark back until it ends, which
	// keeps the output a function of the data. Defaults to the window,
	// at least DefaultIdleTimeout and at most MaxDefaultIdleTimeout.
	IdleTimeout time.Duration `yaml:"idle_timeout"`

	// FutureBound is how far ahead of the stream clock an item's event time
	// may be before the item is Invalid. Negative disables the check.
	// Defaults to DefaultFutureBound.
	FutureBound time.Duration `yaml:"future_bound"`

	// Late is what the caller does with Late items; the buffer only stores
	// it. Defaults to LateDrop.
	Late LatePolicy `yaml:"late"`

	// MetaRetention is how far below the watermark (in event time) a meta
	// identity is still remembered for deduplication. Defaults to the
	// larger of Window and DefaultMetaRetention.
	MetaRetention time.Duration `yaml:"meta_retention"`

	// Capacity is how many items the buffer holds before [Buffer.Full]
	// reports it full: the owner then stops taking items until Release has
	// made room. Defaults to DefaultCapacity.
	Capacity int `yaml:"capacity"`

	// CapacityBytes is how many bytes of items, as measured by the size
	// function given to [Buffer.MeasureWith], the buffer holds before
	// [Buffer.Full] reports it full. Defaults to DefaultCapacityBytes;
	// without a size function it does not apply.
	CapacityBytes int64 `yaml:"capacity_bytes"`
}

func (c *Config) setDefaults() {
	if c.IdleTimeout == 0 {
		// Short, so that a quiet live feed's readings come out within
		// about the window: an input that merely paused does not make
		// its next readings late, since event time then goes on from
		// the newest event, not from the clock.
		c.IdleTimeout = min(max(c.Window, DefaultIdleTimeout), MaxDefaultIdleTimeout)
	}
	if c.FutureBound == 0 {
		c.FutureBound = DefaultFutureBound
	}
	if c.MetaRetention == 0 {
		c.MetaRetention = max(c.Window, DefaultMetaRetention)
	}
	if c.Capacity == 0 {
		c.Capacity = DefaultCapacity
	}
	if c.CapacityBytes == 0 {
		c.CapacityBytes = DefaultCapacityBytes
	}
}

// Validate reports whether c is usable, after defaults. The error wraps
// [ErrInvalidConfig].
func (c Config) Validate() error {
	switch {
	case c.Window < 0:
		return fmt.Errorf("%w: window %v is negative", ErrInvalidConfig, c.Window)
	case c.MetaRetention < 0:
		return fmt.Errorf("%w: meta retention %v is negative", ErrInvalidConfig, c.MetaRetention)
	case c.Capacity < 0 || c.CapacityBytes < 0:
		return fmt.Errorf("%w: capacity %d items, %d bytes is negative", ErrInvalidConfig, c.Capacity, c.CapacityBytes)
	case c.Late > LatePass:
		return fmt.Errorf("%w: late policy %d", ErrInvalidConfig, uint8(c.Late))
	}
	return nil
}
