package operation

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// WriteParticle writes a data particle to w, for operations and engines
// that keep particles in their state; it refuses a meta particle, whose
// type the state codec does not know.
func WriteParticle(w *state.Writer, p *particle.Particle) error {
	if p.Meta != nil {
		return fmt.Errorf("meta particle %q: not a state of its own", p.Meta.MetaType())
	}
	w.PutVarint(p.Time)
	w.PutUvarint(uint64(p.Origin))
	w.PutUvarint(p.Seq)
	w.PutString(p.Measurement)
	w.PutTags(p.Tags)
	w.PutFields(p.Fields)
	return nil
}

// ReadParticle reads a particle written by WriteParticle. A malformed one
// sets r's error (see state.Reader) and gives a zero particle.
func ReadParticle(r *state.Reader) particle.Particle {
	var p particle.Particle
	p.Time = r.ReadVarint()
	at := r.Offset()
	if origin := r.ReadUvarint(); origin > 1<<32-1 {
		r.Fail(fmt.Errorf("%w: origin %d at offset %d", state.ErrMalformed, origin, at))
	} else {
		p.Origin = uint32(origin)
	}
	p.Seq = r.ReadUvarint()
	p.Measurement = r.ReadString()
	p.Tags = r.ReadTags()
	p.Fields = r.ReadFields()
	if r.Err() != nil {
		return particle.Particle{}
	}
	return p
}
