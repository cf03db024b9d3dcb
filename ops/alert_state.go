package ops

import (
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/state"
)

// alertStateVersion is the version of the form an alert's Snapshot writes.
const alertStateVersion = 1

var _ operation.Snapshotter = (*alerter)(nil)

// Snapshot implements operation.Snapshotter: the field watched, the names
// identifying a sensor, and each sensor's state, sorted by sensor: whether
// its alert fires and, for rates, its latest reading.
func (a *alerter) Snapshot(w *state.Writer) error {
	w.PutUvarint(alertStateVersion)
	putStrings(w, a.names())
	state.PutMap(w, a.state, func(s *alertState) {
		w.PutBool(s.firing)
		w.PutBool(s.seen)
		if s.seen {
			w.PutVarint(s.lastT)
			w.PutFloat64(s.lastV)
		}
	})
	return nil
}

// Restore implements operation.Snapshotter. It refuses, with an error wrapping
// operation.ErrStateMismatch, the snapshot of an alert on another field or
// grouping sensors by other names.
func (a *alerter) Restore(r *state.Reader) error {
	operation.CheckVersion(r, "alert", alertStateVersion)
	checkStrings(r, "field and sensor names", a.names())
	state.ReadMap(r, &a.state, func(string) *alertState {
		s := &alertState{firing: r.ReadBool(), seen: r.ReadBool()}
		if s.seen {
			s.lastT, s.lastV = r.ReadVarint(), r.ReadFloat64()
		}
		return s
	})
	return r.Err()
}

// names returns the field watched and the names identifying a sensor,
// which a restored alert must share with the snapshotted one.
func (a *alerter) names() []string { return append([]string{a.field}, a.by...) }
