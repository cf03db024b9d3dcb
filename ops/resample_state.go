package ops

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// resampleStateVersion is the version of the form resample's Snapshot
// writes.
const resampleStateVersion = 1

var _ operation.Snapshotter = (*resample)(nil)

// Snapshot implements operation.Snapshotter: the interval and the names
// identifying a series, then each series, sorted by key: the time and values
// of its latest reading, the next point it emits, and the measurement and tags
// of its points.
func (r *resample) Snapshot(w *state.Writer) error {
	w.PutUvarint(resampleStateVersion)
	w.PutVarint(int64(r.cfg.Every))
	putStrings(w, r.cfg.By)
	state.PutMap(w, r.series, func(s *series) {
		w.PutVarint(s.t)
		w.PutVarint(s.next - s.t)
		w.PutString(s.measurement)
		w.PutTags(s.tags)
		// Every value kept is a float (see values).
		w.PutLen(len(s.vals))
		for _, f := range s.vals {
			w.PutString(f.Key)
			w.PutFloat64(f.Value.FloatValue())
		}
	})
	return nil
}

// Restore implements operation.Snapshotter. It refuses, with an error
// wrapping operation.ErrStateMismatch, the snapshot of a resample at
// another interval or identifying series by other names.
func (r *resample) Restore(rd *state.Reader) error {
	operation.CheckVersion(rd, "resample", resampleStateVersion)
	every := int64(r.cfg.Every)
	if at, e := rd.Offset(), rd.ReadVarint(); rd.Err() == nil && e != every {
		rd.Fail(fmt.Errorf("%w: interval %d ns, not %d (at offset %d)", operation.ErrStateMismatch, e, every, at))
	}
	checkStrings(rd, "series names", r.cfg.By)
	state.ReadMap(rd, &r.series, func(k string) *series {
		at := rd.Offset()
		s := &series{t: rd.ReadVarint()}
		ahead := rd.ReadVarint()
		s.next = s.t + ahead
		// Process keeps the next point a multiple of the interval, at or
		// after the latest reading and less than two intervals after it.
		if rd.Err() == nil && (ahead < 0 || ahead/2 >= every || s.next < s.t || s.next%every != 0) {
			rd.Fail(fmt.Errorf("%w: series %q: next point %d after a reading at %d, every %d ns (at offset %d)", state.ErrMalformed, k, s.next, s.t, every, at))
		}
		s.measurement = rd.ReadString()
		s.tags = rd.ReadTags()
		if n := rd.ReadLen(); n > 0 {
			s.vals = make([]particle.Field, n)
			for i := range s.vals {
				s.vals[i] = particle.Field{Key: rd.ReadString(), Value: particle.Float(rd.ReadFloat64())}
			}
		}
		return s
	})
	return rd.Err()
}
