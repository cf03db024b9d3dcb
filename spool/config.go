package spool

import (
	"fmt"
	"log/slog"
)

// Defaults for Config.
const (
	// DefaultSegmentSize is the size at which a segment is closed and a
	// new one started.
	DefaultSegmentSize = 8 << 20
	// DefaultPreallocate is how far ahead of its end the segment being
	// written is zero-filled.
	DefaultPreallocate = 1 << 20
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
	// Preallocate is how many bytes past its end the segment being
	// written is kept zero-filled, at most SegmentSize. A Sync that
	// writes within that space changes no file size, so its fsync
	// (fdatasync) flushes the data alone: on a journaling file system
	// such as ext4 or XFS it commits no journal transaction, which is
	// slower and waits for the kernel's journal thread and for other
	// files' writes. The space is refilled, in one write, when half of
	// it is used. Negative turns preallocation off: on a copy-on-write
	// file system (btrfs, ZFS) it saves nothing and writes twice.
	// Defaults to DefaultPreallocate.
	Preallocate int64 `yaml:"preallocate"`
	// Repair makes Open go on when it finds damage that is not a torn
	// last write: it cuts the damaged stretches out of the segments,
	// logs them and counts the records lost (Stats.Lost, Spool.Damage).
	// Without it, Open fails with a *CorruptError and changes nothing.
	// Defaults to false.
	Repair bool `yaml:"repair"`
	// Logger receives what Open cut off or repaired. Defaults to
	// discarding it.
	Logger *slog.Logger `yaml:"-"`
}

func (c *Config) setDefaults() {
	if c.SegmentSize == 0 {
		c.SegmentSize = DefaultSegmentSize
	}
	if c.Preallocate == 0 {
		c.Preallocate = DefaultPreallocate
	}
	c.Preallocate = min(c.Preallocate, c.SegmentSize)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports a negative segment size.
func (c *Config) Validate() error {
	if c.SegmentSize < 0 {
		return fmt.Errorf("spool: invalid config: segment size %d < 0", c.SegmentSize)
	}
	return nil
}
