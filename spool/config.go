package spool

import "fmt"

// Defaults for Config.
const (
	// DefaultSegmentSize is the size at which a segment is closed and a
	// new one started.
	DefaultSegmentSize = 8 << 20
	// MaxRecordSize is the largest record Append takes: 256 MiB, the
	// largest MQTT payload.
	MaxRecordSize = 256 << 20
)

// Config configures a Spool. The zero Config is valid.
type Config struct {
	// SegmentSize is the size in bytes past which the current segment is
	// closed at the next Sync and a new one started. Smaller segments are
	// deleted sooner, larger ones cost fewer files. Defaults to
	// DefaultSegmentSize.
	SegmentSize int64 `yaml:"segment_size"`
}

func (c *Config) setDefaults() {
	if c.SegmentSize == 0 {
		c.SegmentSize = DefaultSegmentSize
	}
}

// Validate reports a negative segment size.
func (c *Config) Validate() error {
	if c.SegmentSize < 0 {
		return fmt.Errorf("spool: invalid config: segment size %d < 0", c.SegmentSize)
	}
	return nil
}
