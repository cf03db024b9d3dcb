package operation

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// The parts of particles that operations keep in their state: tags and
// field values.

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
