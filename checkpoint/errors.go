package checkpoint

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound is returned by [Latest] when no checkpoint is complete,
	// and wrapped by [Store.Manifest] for a checkpoint that is not.
	ErrNotFound = errors.New("checkpoint: not found")

	// ErrInvalidName is wrapped by the error of a Put or Get given an
	// empty instance name.
	ErrInvalidName = errors.New("checkpoint: invalid instance name")

	// ErrCommitted is wrapped by the error of a Commit of a checkpoint
	// complete already: of two writers of one store's checkpoints (a
	// unit's holder and one that lost it but still writes), one completes
	// each.
	ErrCommitted = errors.New("checkpoint: already committed")

	// ErrChecksum is the Err of a [CorruptError] whose chunk does not
	// match its CRC-32C.
	ErrChecksum = errors.New("checkpoint: checksum mismatch")

	// ErrFormat is the Err of a [CorruptError] whose file is not what a
	// Store writes: another magic or version, bytes past the end, a
	// manifest of another checkpoint.
	ErrFormat = errors.New("checkpoint: not a checkpoint file")
)

// CorruptError refuses a damaged or missing file of a complete
// checkpoint. Err is ErrChecksum, ErrFormat, io.ErrUnexpectedEOF for a
// truncated file, fs.ErrNotExist for a missing one, or a decoding error of
// package state.
type CorruptError struct {
	// File names the file: a path for [Dir].
	File string
	// Offset is the byte offset in File of the damaged chunk or value.
	Offset int64
	// Err says what is wrong.
	Err error
}

// Error returns "checkpoint: FILE at offset N: reason".
func (e *CorruptError) Error() string {
	return fmt.Sprintf("checkpoint: %s at offset %d: %v", e.File, e.Offset, e.Err)
}

// Unwrap returns e.Err.
func (e *CorruptError) Unwrap() error { return e.Err }
