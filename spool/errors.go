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
	// ErrFailed is wrapped, with its cause, in the error of a Sync that
	// failed to write or flush (such as a full disk: syscall.ENOSPC), and
	// of every Append, Sync and Close after it: the Spool must be reopened.
	ErrFailed = errors.New("spool: a Sync failed")
	// ErrTooLarge is returned by Append for a record longer than
	// MaxRecordSize.
	ErrTooLarge = errors.New("spool: record too large")
	// ErrBadRecord is returned by PendingRecords for a record that is not
	// a Record: checksummed, so written so by a bug, not damaged.
	ErrBadRecord = errors.New("spool: record unreadable")
)

// Damage is a damaged stretch of a segment: bytes that are not intact
// frames, or records missing from the numbering.
type Damage struct {
	// Path is the segment file; Offset the byte where the damage starts,
	// Length how many bytes it spans (zero when records are missing
	// without damaged bytes, such as a deleted segment).
	Path           string
	Offset, Length int64
	// Lost is the number of records that were in it and not completed.
	Lost uint64
	// Err describes the damage.
	Err error
}

// CorruptError is returned by Open for damage that is not a torn last
// write: bytes that a Sync had made durable, in any segment. Open fails
// with it unless Config.Repair is set; then it cuts the damage out,
// reports it with Spool.Damage and Stats.Lost, and goes on with the rest.
// Pending returns it for a segment damaged while the Spool was open.
type CorruptError struct {
	// Damage lists the damaged stretches, oldest first.
	Damage []Damage
	// Lost is the number of records they held that were not completed:
	// acknowledged upstream, now gone.
	Lost uint64
}

// Error implements error.
func (e *CorruptError) Error() string {
	d := e.Damage[0]
	return fmt.Sprintf("spool: corrupt segment %s at offset %d: %v: %d records lost in %d damaged stretches",
		d.Path, d.Offset, d.Err, e.Lost, len(e.Damage))
}

// Unwrap returns the error of the first damaged stretch.
func (e *CorruptError) Unwrap() error { return e.Damage[0].Err }
