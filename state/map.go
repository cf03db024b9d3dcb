package state

import (
	"fmt"
	"slices"
	"strings"
)

// PutMap writes the count of entries of m, then each key and its value,
// written by put, in the order of the keys: a snapshot of the same map
// gives the same bytes, whatever Go's map iteration order.
func PutMap[V any](w *Writer, m map[string]V, put func(v V)) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	w.PutLen(len(keys))
	for _, k := range keys {
		w.PutString(k)
		put(m[k])
	}
}

// ReadMap reads entries written by [PutMap] into *m, each value by read,
// which is given its key; it makes *m, sized for them, when *m is empty.
// It fails r with [ErrMalformed] on a key out of order or given twice,
// and stops at r's first error, leaving in *m the entries read before.
func ReadMap[V any](r *Reader, m *map[string]V, read func(key string) V) {
	n := r.ReadLen()
	if len(*m) == 0 {
		*m = make(map[string]V, n)
	}
	var prev string
	for i := range n {
		at := r.Offset()
		k := r.ReadString()
		if r.Err() == nil && i > 0 && k <= prev {
			r.Fail(fmt.Errorf("%w: key %q after %q (at offset %d)", ErrMalformed, k, prev, at))
		}
		prev = k
		v := read(k)
		if r.Err() != nil {
			return
		}
		(*m)[k] = v
	}
}
