package acker

import (
	"fmt"
	"math"
	"time"
)

// Defaults for [Config].
const (
	DefaultCapacity        = 1 << 16
	DefaultProgressTimeout = 30 * time.Second
	DefaultHardTimeout     = 5 * time.Minute
)

// MaxCapacity is the largest Config.Capacity: a [RootID] holds its slot
// index in 32 bits.
const MaxCapacity = math.MaxInt32

// Config configures a [Table]. The zero Config is valid and means all
// defaults.
type Config struct {
	// Capacity is the maximum number of pending trees. Slot memory grows
	// with use up to Capacity × 16 bytes.
	// Defaults to DefaultCapacity (65536).
	Capacity int `yaml:"capacity"`

	// ProgressTimeout fails a tree with [Timeout] once it has made no
	// progress (no Init or Update) for this long on the progress clock.
	// Defaults to DefaultProgressTimeout (30s).
	ProgressTimeout time.Duration `yaml:"progress_timeout"`

	// HardTimeout fails a tree with [Expired] once it is this old on the
	// stream clock, progress or not.
	// Defaults to DefaultHardTimeout (5m).
	HardTimeout time.Duration `yaml:"hard_timeout"`
}

func (c *Config) setDefaults() {
	if c.Capacity == 0 {
		c.Capacity = DefaultCapacity
	}
	if c.ProgressTimeout == 0 {
		c.ProgressTimeout = DefaultProgressTimeout
	}
	if c.HardTimeout == 0 {
		c.HardTimeout = DefaultHardTimeout
	}
}

// Validate reports whether c is usable after defaults are applied: zero
// fields are valid (they take their defaults), negative ones are not. The
// error wraps [ErrInvalidConfig].
func (c Config) Validate() error {
	c.setDefaults()
	if c.Capacity < 1 || c.Capacity > MaxCapacity {
		return fmt.Errorf("%w: capacity %d not in [1, %d]", ErrInvalidConfig, c.Capacity, MaxCapacity)
	}
	if c.ProgressTimeout < 0 {
		return fmt.Errorf("%w: negative progress timeout %v", ErrInvalidConfig, c.ProgressTimeout)
	}
	if c.HardTimeout < 0 {
		return fmt.Errorf("%w: negative hard timeout %v", ErrInvalidConfig, c.HardTimeout)
	}
	return nil
}
