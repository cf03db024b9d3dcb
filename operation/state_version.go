package operation

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/state"
)

// CheckVersion reads the version a snapshot starts with, written by
// w.PutUvarint, and fails r with an error wrapping [ErrStateMismatch]
// unless it is want: a [Snapshotter] that may change the form of its
// state writes a version first and refuses, at restore, a form it does
// not read. what names the state in the error, for example "window".
func CheckVersion(r *state.Reader, what string, want uint64) {
	if v := r.ReadUvarint(); r.Err() == nil && v != want {
		r.Fail(fmt.Errorf("%w: %s state version %d, not %d", ErrStateMismatch, what, v, want))
	}
}
