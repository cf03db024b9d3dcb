package ops

import (
	"fmt"
	"slices"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/state"
)

// What the snapshots of the built-ins share besides a version
// (operation.CheckVersion) and maps (state.PutMap): the names of the
// configuration that gives the state its meaning.

// putStrings writes a list of names, such as the tags grouping an
// operation's state, for [checkStrings] to compare at restore.
func putStrings(w *state.Writer, names []string) {
	w.PutLen(len(names))
	for _, n := range names {
		w.PutString(n)
	}
}

// checkStrings reads a list written by putStrings and fails r with an error
// wrapping operation.ErrStateMismatch unless it is want: the snapshot of an
// operation configured otherwise, whose state means something else.
func checkStrings(r *state.Reader, what string, want []string) {
	at := r.Offset()
	got := make([]string, r.ReadLen())
	for i := range got {
		got[i] = r.ReadString()
	}
	if r.Err() == nil && !slices.Equal(got, want) {
		r.Fail(fmt.Errorf("%w: %s %q, not %q (at offset %d)", operation.ErrStateMismatch, what, got, want, at))
	}
}
