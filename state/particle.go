package state

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/particle"
)

// The parts of particles that operations keep in their state: tags, and
// fields with their typed values.

// PutTags writes the count of tags, then each tag's key and value.
func (w *Writer) PutTags(tags []particle.Tag) {
	w.PutLen(len(tags))
	for _, t := range tags {
		w.PutString(t.Key)
		w.PutString(t.Value)
	}
}

// ReadTags reads tags written by [Writer.PutTags]: nil when there are
// none.
func (r *Reader) ReadTags() []particle.Tag {
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

// PutFields writes the count of fields, then each field's key and value:
// the value's kind, then the value in the form of its kind.
func (w *Writer) PutFields(fields []particle.Field) {
	w.PutLen(len(fields))
	for _, f := range fields {
		w.PutString(f.Key)
		w.putValue(f.Value)
	}
}

// ReadFields reads fields written by [Writer.PutFields]: nil when there
// are none. A value of a kind unknown fails r with [ErrMalformed].
func (r *Reader) ReadFields() []particle.Field {
	n := r.ReadLen()
	if n == 0 {
		return nil
	}
	fields := make([]particle.Field, n)
	for i := range fields {
		fields[i] = particle.Field{Key: r.ReadString(), Value: r.readValue()}
	}
	return fields
}

func (w *Writer) putValue(v particle.Value) {
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

func (r *Reader) readValue() particle.Value {
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
	r.Fail(fmt.Errorf("%w: value kind %d at offset %d", ErrMalformed, k, at))
	return particle.Value{}
}
