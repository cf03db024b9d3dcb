package operation

import (
	"strings"

	"github.com/sensorstorm/sensorstorm/particle"
)

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
		var b strings.Builder
		for i, n := range names {
			if i > 0 {
				b.WriteByte(0)
			}
			b.WriteString(lookup(p, n))
		}
		return b.String()
	}
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

// groupTags returns the tags among names that p carries, sorted by key, for
// the results of a group.
func groupTags(p *particle.Particle, names []string) []particle.Tag {
	var tags []particle.Tag
	for _, n := range names {
		if v, ok := p.Tag(n); ok {
			tags = append(tags, particle.Tag{Key: n, Value: v})
		}
	}
	r := particle.Particle{Tags: tags}
	r.SortTags()
	return r.Tags
}
