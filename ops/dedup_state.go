package ops

import (
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/state"
)

// dedupStateVersion is the version of the form dedup's Snapshot writes.
const dedupStateVersion = 1

var _ operation.Snapshotter = (*dedup)(nil)

// Snapshot implements operation.Snapshotter: the names identifying a reading,
// the number of readings dropped, and the identities remembered, in the order
// they were first seen, with the time each was.
func (d *dedup) Snapshot(w *state.Writer) error {
	w.PutUvarint(dedupStateVersion)
	putStrings(w, d.by)
	w.PutUvarint(d.dropped)
	live := d.order[d.head:]
	w.PutLen(len(live))
	prev := int64(0)
	for _, e := range live {
		w.PutString(e.id)
		// Mostly in event-time order: the differences are small.
		w.PutVarint(e.t - prev)
		prev = e.t
	}
	return nil
}

// Restore implements operation.Snapshotter. It refuses, with an error wrapping
// operation.ErrStateMismatch, the snapshot of a dedup identifying readings by
// other names.
func (d *dedup) Restore(r *state.Reader) error {
	operation.CheckVersion(r, "dedup", dedupStateVersion)
	checkStrings(r, "identity", d.by)
	dropped := r.ReadUvarint()
	order := make([]seenID, r.ReadLen())
	t := int64(0)
	for i := range order {
		id := r.ReadString()
		t += r.ReadVarint()
		order[i] = seenID{id: id, t: t}
	}
	if err := r.Err(); err != nil {
		return err
	}
	// An identity is seen again only after it expired: its latest entry
	// is the one seen maps it to.
	if len(d.seen) == 0 {
		d.seen = make(map[string]int64, len(order))
	}
	for _, e := range order {
		d.seen[e.id] = e.t
	}
	d.order, d.head, d.dropped = order, 0, dropped
	return nil
}
