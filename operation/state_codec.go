package operation

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sensorstorm/sensorstorm/state"
)

// What the snapshots of operations share: a version first, the names of
// the configuration that gives the state its meaning, and maps written in
// the order of their keys.

// putStrings writes a list of names, such as the tags grouping an
// operation's state, for [checkStrings] to compare at restore.
func putStrings(w *state.Writer, names []string) {
	w.PutLen(len(names))
	for _, n := range names {
		w.PutString(n)
	}
}

// checkStrings reads a list written by putStrings and fails r with an
// error wrapping ErrStateMismatch unless it is want: the snapshot of an
// operation configured otherwise, whose state means something else.
func checkStrings(r *state.Reader, what string, want []string) {
	at := r.Offset()
	got := make([]string, r.ReadLen())
	for i := range got {
		got[i] = r.ReadString()
	}
	if r.Err() == nil && !slices.Equal(got, want) {
		r.Fail(fmt.Errorf("%w: %s %q, not %q (at offset %d)", ErrStateMismatch, what, got, want, at))
	}
}

// checkVersion reads the version an operation's snapshot starts with and
// fails r with an error wrapping ErrStateMismatch unless it is want.
func checkVersion(r *state.Reader, what string, want uint64) {
	if v := r.ReadUvarint(); r.Err() == nil && v != want {
		r.Fail(fmt.Errorf("%w: %s state version %d, not %d", ErrStateMismatch, what, v, want))
	}
}

// putMap writes the entries of m in the order of their keys, each value
// by put, so that a snapshot of the same state gives the same bytes.
func putMap[V any](w *state.Writer, m map[string]V, put func(v V)) {
	type entry struct {
		k string
		v V
	}
	entries := make([]entry, 0, len(m))
	for k, v := range m {
		entries = append(entries, entry{k, v})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.k, b.k) })
	w.PutLen(len(entries))
	for _, e := range entries {
		w.PutString(e.k)
		put(e.v)
	}
}

// readMap reads entries written by putMap into *m, each value by read,
// sizing an empty map for them. It fails r on a key out of order or
// twice, and stops at r's first error.
func readMap[V any](r *state.Reader, m *map[string]V, read func(key string) V) {
	n := r.ReadLen()
	if len(*m) == 0 {
		*m = make(map[string]V, n)
	}
	var prev string
	for i := range n {
		at := r.Offset()
		k := r.ReadString()
		if r.Err() == nil && i > 0 && k <= prev {
			r.Fail(fmt.Errorf("%w: key %q after %q (at offset %d)", state.ErrMalformed, k, prev, at))
		}
		prev = k
		v := read(k)
		if r.Err() != nil {
			return
		}
		(*m)[k] = v
	}
}
