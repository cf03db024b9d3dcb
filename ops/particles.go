package ops

import "github.com/sensorstorm/sensorstorm/particle"

// What the built-ins read of particles: the tags of a group, and numbers.

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

// number returns numeric field values; booleans and strings are neither
// aggregated nor watched.
func number(v particle.Value) (float64, bool) {
	if v.Kind() == particle.KindBool {
		return 0, false
	}
	return v.Number()
}
