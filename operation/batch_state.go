package operation

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

var _ state.Codec[[]particle.Particle] = batchAggregator(nil)

// EncodeState implements state.Codec: a window's data particles, which gob
// cannot encode (their values keep their fields unexported).
func (batchAggregator) EncodeState(w *state.Writer, acc []particle.Particle) error {
	w.PutLen(len(acc))
	for i := range acc {
		p := &acc[i]
		if p.Meta != nil {
			return fmt.Errorf("meta particle %q in a window", p.Meta.MetaType())
		}
		w.PutVarint(p.Time)
		w.PutUvarint(uint64(p.Origin))
		w.PutUvarint(p.Seq)
		w.PutString(p.Measurement)
		putTags(w, p.Tags)
		w.PutLen(len(p.Fields))
		for _, f := range p.Fields {
			w.PutString(f.Key)
			putValue(w, f.Value)
		}
	}
	return nil
}

// DecodeState implements state.Codec.
func (batchAggregator) DecodeState(r *state.Reader) ([]particle.Particle, error) {
	n := r.ReadLen()
	if n == 0 {
		return nil, r.Err()
	}
	acc := make([]particle.Particle, n)
	for i := range acc {
		p := &acc[i]
		p.Time = r.ReadVarint()
		at := r.Offset()
		if origin := r.ReadUvarint(); origin > 1<<32-1 {
			r.Fail(fmt.Errorf("%w: origin %d at offset %d", state.ErrMalformed, origin, at))
		} else {
			p.Origin = uint32(origin)
		}
		p.Seq = r.ReadUvarint()
		p.Measurement = r.ReadString()
		p.Tags = readTags(r)
		if n := r.ReadLen(); n > 0 {
			p.Fields = make([]particle.Field, n)
			for j := range p.Fields {
				p.Fields[j] = particle.Field{Key: r.ReadString(), Value: readValue(r)}
			}
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return acc, nil
}
