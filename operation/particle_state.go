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
	putTags(w, p.Tags)
	putFields(w, p.Fields)
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
	p.Tags = readTags(r)
	p.Fields = readFields(r)
	if r.Err() != nil {
		return particle.Particle{}
	}
	return p
}

// The parts of particles that operations keep in their state: tags,
// fields and field values.

func putTags(w *state.Writer, tags []particle.Tag) {
	w.PutLen(len(tags))
	for _, t := range tags {
		w.PutString(t.Key)
		w.PutString(t.Value)
	}
}

// readTags reads tags written by putTags: nil when there are none.
func readTags(r *state.Reader) []particle.Tag {
	n := r.ReadLen()
	if n == 0 {
		return nil
	}
	tags := make([]particle.Tag, n)
	for i := range tags {
		tags[i] = particle.Tag{Key: r.ReadString(), Value: r.ReadString()}
	}
	return tags
}

func putFields(w *state.Writer, fields []particle.Field) {
	w.PutLen(len(fields))
	for _, f := range fields {
		w.PutString(f.Key)
		putValue(w, f.Value)
	}
}

// readFields reads fields written by putFields: nil when there are none.
func readFields(r *state.Reader) []particle.Field {
	n := r.ReadLen()
	if n == 0 {
		return nil
	}
	fields := make([]particle.Field, n)
	for i := range fields {
		fields[i] = particle.Field{Key: r.ReadString(), Value: readValue(r)}
	}
	return fields
}

func putValue(w *state.Writer, v particle.Value) {
	w.PutUvarint(uint64(v.Kind()))
	switch v.Kind() {
	case particle.KindFloat:
		w.PutFloat64(v.FloatValue())
	case particle.KindInt:
		w.PutVarint(v.IntValue())
	case particle.KindUint:
		w.PutUvarint(v.UintValue())
	case particle.KindString:
		w.PutString(v.StringValue())
	case particle.KindBool:
		w.PutBool(v.BoolValue())
	}
}

func readValue(r *state.Reader) particle.Value {
	at := r.Offset()
	k := r.ReadUvarint()
	switch k {
	case uint64(particle.KindInvalid):
		return particle.Value{}
	case uint64(particle.KindFloat):
		return particle.Float(r.ReadFloat64())
	case uint64(particle.KindInt):
		return particle.Int(r.ReadVarint())
	case uint64(particle.KindUint):
		return particle.Uint(r.ReadUvarint())
	case uint64(particle.KindString):
		return particle.String(r.ReadString())
	case uint64(particle.KindBool):
		return particle.Bool(r.ReadBool())
	}
	r.Fail(fmt.Errorf("%w: value kind %d at offset %d", state.ErrMalformed, k, at))
	return particle.Value{}
}
