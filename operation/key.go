package operation

import "github.com/sensorstorm/sensorstorm/particle"

// ByTags returns a KeyFunc grouping particles by the values of the named
// tags, or of fields where no such tag exists (like the engine's fields
// grouping). With no names, every particle is in one group.
func ByTags(names ...string) KeyFunc {
	if len(names) == 0 {
		return nil
	}
	if len(names) == 1 {
		name := names[0]
		return func(p *particle.Particle) string { return lookup(p, name) }
	}
	return func(p *particle.Particle) string {
		var buf [64]byte
		return string(AppendKey(buf[:0], p, names...))
	}
}

// AppendKey appends to b the key that ByTags(names...) gives p, the
// values joined by zero bytes, allocating only to grow b: for an
// operation that looks keys up in a map with a reused buffer, as
// m[string(b)] does not copy b.
func AppendKey(b []byte, p *particle.Particle, names ...string) []byte {
	for i, n := range names {
		if i > 0 {
			b = append(b, 0)
		}
		b = appendLookup(b, p, n)
	}
	return b
}

// lookup returns the value of tag name, or the text of field name.
func lookup(p *particle.Particle, name string) string {
	if v, ok := p.Tag(name); ok {
		return v
	}
	if v, ok := p.Field(name); ok {
		if v.Kind() == particle.KindString {
			return v.StringValue()
		}
		return v.String()
	}
	return ""
}

// appendLookup appends what lookup returns to b, without allocating a
// string for numeric fields.
func appendLookup(b []byte, p *particle.Particle, name string) []byte {
	if v, ok := p.Tag(name); ok {
		return append(b, v...)
	}
	if v, ok := p.Field(name); ok {
		if v.Kind() == particle.KindString {
			return append(b, v.StringValue()...)
		}
		return v.AppendTo(b)
	}
	return b
}
