package operation

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/state"
)

// timersStateVersion is the version of the form [Timers.Snapshot] writes.
const timersStateVersion = 1

// timerDomains are the domains of Timers, in the order their timers are
// snapshotted.
var timerDomains = [...]metaparticle.Domain{metaparticle.EventTime, metaparticle.StreamTime}

// Snapshot writes the timers set, of both domains, in the order they fire,
// each key written by put, for the Snapshot of an operation that keeps
// timers (see [Snapshotter]). Restore reads them back.
func (t *Timers[K]) Snapshot(w *state.Writer, put func(w *state.Writer, key K) error) error {
	w.PutUvarint(timersStateVersion)
	for _, d := range timerDomains {
		ids := t.ordered(d)
		w.PutLen(len(ids))
		prev := int64(0)
		for _, id := range ids {
			// In firing order the times grow: their differences are small.
			w.PutVarint(id.at - prev)
			prev = id.at
			if err := put(w, id.key); err != nil {
				return fmt.Errorf("snapshot timer at %d: %w", id.at, err)
			}
		}
	}
	return nil
}

// Restore reads timers written by [Timers.Snapshot] and sets them after
// those already set, in the order they fired: into Timers with none set,
// they fire as the snapshotted ones would have. read reads each key; it is
// given the timer's domain and time, so that an operation can rebuild what
// it keeps about its timers, and must return an error when r's is set (see
// [state.Reader.Err]). An error of read or of r is returned, and leaves t
// with some of the timers set.
func (t *Timers[K]) Restore(r *state.Reader, read func(r *state.Reader, d metaparticle.Domain, at int64) (K, error)) error {
	CheckVersion(r, "timers", timersStateVersion)
	for _, d := range timerDomains {
		n := r.ReadLen()
		t.reserve(d, n)
		at := int64(0)
		for range n {
			at += r.ReadVarint()
			key, err := read(r, d, at)
			if err != nil {
				return fmt.Errorf("restore timers: %w", err)
			}
			if err := r.Err(); err != nil {
				break
			}
			t.Set(d, key, at)
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("restore timers: %w", err)
	}
	return nil
}
