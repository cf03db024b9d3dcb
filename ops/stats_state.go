package ops

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/state"
)

var _ state.Codec[*statsAcc] = (*statsAgg)(nil)

// EncodeState implements state.Codec: per field its count, sum, mean,
// squared deviations, min and max, and the values kept for percentiles.
func (s *statsAgg) EncodeState(w *state.Writer, acc *statsAcc) error {
	w.PutBool(acc != nil)
	if acc == nil {
		return nil
	}
	w.PutString(acc.measurement)
	w.PutTags(acc.tags)
	w.PutLen(len(acc.fields))
	for i := range acc.fields {
		f := &acc.fields[i]
		w.PutString(f.name)
		w.PutCount(f.n)
		for _, x := range [...]float64{f.sum, f.mean, f.m2, f.min, f.max} {
			w.PutFloat64(x)
		}
		w.PutLen(len(f.values))
		for _, x := range f.values {
			w.PutFloat64(x)
		}
	}
	return nil
}

// DecodeState implements state.Codec.
func (s *statsAgg) DecodeState(r *state.Reader) (*statsAcc, error) {
	if !r.ReadBool() {
		return nil, r.Err()
	}
	acc := &statsAcc{measurement: r.ReadString()}
	acc.tags = r.ReadTags()
	acc.fields = make([]fieldStats, r.ReadLen())
	for i := range acc.fields {
		f := &acc.fields[i]
		f.name = r.ReadString()
		f.n = r.ReadCount()
		f.sum, f.mean, f.m2, f.min, f.max = r.ReadFloat64(), r.ReadFloat64(), r.ReadFloat64(), r.ReadFloat64(), r.ReadFloat64()
		at, n := r.Offset(), r.ReadLen()
		if r.Err() == nil && n != f.n && (s.keep || n > 0) {
			// Percentiles index the values by rank among n.
			r.Fail(fmt.Errorf("%w: %d values kept of %d at offset %d", state.ErrMalformed, n, f.n, at))
		}
		if n > 0 && r.Err() == nil {
			f.values = make([]float64, n)
			for j := range f.values {
				f.values[j] = r.ReadFloat64()
			}
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return acc, nil
}
