package spool

import (
	"errors"
	"fmt"
)

var (
	// ErrLocked is returned by Open when another Spool, in this process
	// or another, has the directory open.
	ErrLocked = errors.New("spool: directory in use by another spool")
	// ErrClosed is returned by methods called after Close.
	ErrClosed = errors.New("spool: closed")
	// ErrTooLarge is returned by Append for a record longer than
	// MaxRecordSize.
	ErrTooLarge = errors.New("spool: record too large")
)

// CorruptError reports a damaged segment: a record that fails its
// checksum or overruns the file anywhere but at the end of the newest
// segment.
type CorruptError struct {
	// Path is the segment file; Offset the byte where the damage starts.
	Path   string
	Offset int64
	// Err describes the damage.
	Err error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("spool: corrupt segment %s at offset %d: %v", e.Path, e.Offset, e.Err)
}

// Unwrap returns e.Err.
func (e *CorruptError) Unwrap() error { return e.Err }
