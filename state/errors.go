package state

import (
	"errors"
	"fmt"
)

var (
	// ErrTruncated is wrapped by the error of a Reader whose input ended
	// inside a value, or before the end a length announced.
	ErrTruncated = errors.New("state: truncated")

	// ErrMalformed is wrapped by the error of a Reader that met bytes no
	// Writer writes: a varint longer than 64 bits, a boolean other than 0
	// or 1.
	ErrMalformed = errors.New("state: malformed")
)

// DecodeError is the error of a [Reader]: what went wrong and the offset
// in its input of the value it could not read.
type DecodeError struct {
	// Offset is the byte offset of the value in the Reader's input.
	Offset int
	// Err is ErrTruncated, ErrMalformed or an error of the decoder that
	// called [Reader.Fail].
	Err error
}

// Error returns "state: at offset N: reason".
func (e *DecodeError) Error() string {
	return fmt.Sprintf("state: at offset %d: %v", e.Offset, e.Err)
}

// Unwrap returns e.Err.
func (e *DecodeError) Unwrap() error { return e.Err }
