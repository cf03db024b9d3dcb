package postgres

import (
	"slices"

	"github.com/sensorstorm/sensorstorm/particle"
)

// rowKey identifies a row: a point of a series at an event time in
// nanoseconds.
type rowKey struct {
	series string
	time   int64
}

// mergeFields merges the fields of p into dst, a particle of the same
// series and time, as InfluxDB merges the fields of one point written
// twice: a field of p takes p's value, the others keep theirs. It reports
// whether dst changed, and whether it gained a key. dst's fields are
// copied before they change: a particle's slices are shared.
func mergeFields(dst, p *particle.Particle) (changed, newKey bool) {
	copied := false
	for _, f := range p.Fields {
		i := slices.IndexFunc(dst.Fields, func(g particle.Field) bool { return g.Key == f.Key })
		if i >= 0 && dst.Fields[i].Value == f.Value {
			continue
		}
		if !copied {
			dst.Fields = slices.Clone(dst.Fields)
			copied = true
		}
		changed = true
		if i >= 0 {
			dst.Fields[i].Value = f.Value
			continue
		}
		newKey = true
		dst.Fields = append(dst.Fields, f)
	}
	return changed, newKey
}
