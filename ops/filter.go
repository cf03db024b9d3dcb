package ops

import (
	"context"
	"path"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// NewFilter returns an operation that passes on the particles, and the
// fields of particles, that cfg selects; the others are acknowledged and
// dropped.
func NewFilter(cfg FilterConfig) (operation.Operation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &filter{cfg: cfg}, nil
}

type filter struct{ cfg FilterConfig }

func (f *filter) Process(_ context.Context, in particle.Particle, out operation.Emitter) error {
	c := &f.cfg
	if len(c.NamePass) > 0 && !matchAny(c.NamePass, in.Measurement) || matchAny(c.NameDrop, in.Measurement) {
		return nil
	}
	if len(c.TagPass) > 0 && !matchTags(c.TagPass, &in) || matchTags(c.TagDrop, &in) {
		return nil
	}
	if len(c.FieldPass) > 0 || len(c.FieldDrop) > 0 {
		var fields []particle.Field
		for _, fl := range in.Fields {
			if (len(c.FieldPass) == 0 || matchAny(c.FieldPass, fl.Key)) && !matchAny(c.FieldDrop, fl.Key) {
				fields = append(fields, fl)
			}
		}
		if len(fields) == 0 {
			return nil
		}
		in.Fields = fields
	}
	out.Emit(in)
	return nil
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

func matchTags(m map[string][]string, p *particle.Particle) bool {
	for k, pats := range m {
		if v, ok := p.Tag(k); ok && matchAny(pats, v) {
			return true
		}
	}
	return false
}
