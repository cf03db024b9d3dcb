package particle

import (
	"sort"
	"time"
)

// Kind tells data particles from meta particles.
type Kind uint8

const (
	// KindData is a sensor reading or a value derived from one.
	KindData Kind = iota
	// KindMeta is a control message broadcast to every bolt instance.
	KindMeta
)

// String returns "data" or "meta".
func (k Kind) String() string {
	if k == KindMeta {
		return "meta"
	}
	return "data"
}

// Meta is the payload of a meta particle. Package metaparticle holds the
// built-in ones; users may define their own.
type Meta interface {
	// MetaType names the kind of meta particle, for example "tick".
	MetaType() string
}

// Tag is an indexed string attribute of a reading, such as a sensor id.
type Tag struct {
	Key, Value string
}

// Field is a named, typed value of a reading.
type Field struct {
	Key   string
	Value Value
}

// Particle is one timestamped record in a stream.
//
// Tags are kept sorted by key (see [Particle.SortTags]); Fields keep the
// order in which they were added. A particle with a non-nil Meta is a meta
// particle and carries no sensor payload.
type Particle struct {
	// Time is the event time in nanoseconds since the Unix epoch.
	Time int64
	// Origin identifies the component instance that created the particle.
	Origin uint32
	// Seq is the particle's sequence number within its origin.
	Seq uint64

	Measurement string
	Tags        []Tag
	Fields      []Field

	// Meta is non-nil for meta particles.
	Meta Meta
}

// Kind reports whether p is a data or a meta particle.
func (p *Particle) Kind() Kind {
	if p.Meta != nil {
		return KindMeta
	}
	return KindData
}

// EventTime returns p.Time as a time.Time in UTC.
func (p *Particle) EventTime() time.Time {
	return time.Unix(0, p.Time).UTC()
}

// Tag returns the value of the tag with the given key.
func (p *Particle) Tag(key string) (string, bool) {
	for i := range p.Tags {
		if p.Tags[i].Key == key {
			return p.Tags[i].Value, true
		}
	}
	return "", false
}

// Field returns the value of the field with the given key.
func (p *Particle) Field(key string) (Value, bool) {
	for i := range p.Fields {
		if p.Fields[i].Key == key {
			return p.Fields[i].Value, true
		}
	}
	return Value{}, false
}

// SortTags sorts p.Tags by key in place, as line protocol expects.
func (p *Particle) SortTags() {
	if !sort.SliceIsSorted(p.Tags, func(i, j int) bool { return p.Tags[i].Key < p.Tags[j].Key }) {
		sort.Slice(p.Tags, func(i, j int) bool { return p.Tags[i].Key < p.Tags[j].Key })
	}
}

// Clone returns a deep copy of p's tags and fields, so that the copy can be
// modified without affecting particles that share p's slices.
func (p Particle) Clone() Particle {
	p.Tags = append([]Tag(nil), p.Tags...)
	p.Fields = append([]Field(nil), p.Fields...)
	return p
}
