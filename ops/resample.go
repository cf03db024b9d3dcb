package ops

import (
	"context"
	"math"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// NewResample returns an operation that turns each series (per cfg.By)
// into one particle per multiple of cfg.Every, with the latest value at or
// before each point (ResampleLast) or the value interpolated linearly
// between the readings around it (ResampleLinear). Points are emitted as
// soon as they are known: a point between two readings when the second
// arrives, a point on a reading with it. Each series' output is in
// event-time order; series emit independently, so a bolt downstream needs
// a window of about the readings' interval to merge them in order. Gaps
// longer than cfg.MaxGap, when set, are left empty. A reading older than
// its series' latest is ignored.
func NewResample(cfg ResampleConfig) (operation.Operation, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &resample{cfg: cfg, key: operation.ByTags(cfg.By...), series: map[string]*series{}}, nil
}

type resample struct {
	cfg    ResampleConfig
	key    operation.KeyFunc
	series map[string]*series
}

type series struct {
	t           int64
	vals        []particle.Field
	next        int64 // the next point to emit
	measurement string
	tags        []particle.Tag
}

func (r *resample) Process(_ context.Context, in particle.Particle, out operation.Emitter) error {
	var k string
	if r.key != nil {
		k = r.key(&in)
	}
	every := int64(r.cfg.Every)
	s := r.series[k]
	t := in.Time
	switch {
	case s == nil:
		s = &series{next: ceilTo(t, every), measurement: in.Measurement, tags: groupTags(&in, r.cfg.By)}
		r.series[k] = s
	case t <= s.t:
		return nil
	case r.cfg.MaxGap > 0 && t-s.t > int64(r.cfg.MaxGap):
		s.next = ceilTo(t, every)
	default:
		for ; s.next < t; s.next += every {
			r.emit(out, s, s.next, r.between(s, &in, s.next))
		}
	}
	cur := r.values(&in)
	if s.next == t && len(cur) > 0 {
		r.emit(out, s, t, cur)
		s.next += every
	}
	s.t, s.vals = t, cur
	return nil
}

// OutputHold implements operation.OutputHolder: the earliest point still to be
// emitted, of the series that may still emit it. A series without a reading
// for more than MaxGap skips its pending points; without MaxGap a quiet
// series holds the watermark until its next reading, which its points need.
func (r *resample) OutputHold(wm int64) int64 {
	hold := int64(math.MaxInt64)
	for _, s := range r.series {
		if r.cfg.MaxGap > 0 && wm-s.t >= int64(r.cfg.MaxGap) {
			continue
		}
		hold = min(hold, s.next)
	}
	return hold
}

// between returns the values of point g between the last reading of s and
// in.
func (r *resample) between(s *series, in *particle.Particle, g int64) []particle.Field {
	if r.cfg.Method == ResampleLast {
		return s.vals
	}
	var vals []particle.Field
	frac := float64(g-s.t) / float64(in.Time-s.t)
	for _, f := range s.vals {
		v, ok := in.Field(f.Key)
		if !ok {
			continue
		}
		x, ok := number(v)
		if !ok {
			continue
		}
		x0 := f.Value.FloatValue()
		vals = append(vals, particle.Field{Key: f.Key, Value: particle.Float(x0 + (x-x0)*frac)})
	}
	return vals
}

// values returns the resampled fields of p as floats.
func (r *resample) values(p *particle.Particle) []particle.Field {
	var vals []particle.Field
	add := func(key string, v particle.Value) {
		if x, ok := number(v); ok {
			vals = append(vals, particle.Field{Key: key, Value: particle.Float(x)})
		}
	}
	if len(r.cfg.Fields) == 0 {
		for _, f := range p.Fields {
			add(f.Key, f.Value)
		}
		return vals
	}
	for _, name := range r.cfg.Fields {
		if v, ok := p.Field(name); ok {
			add(name, v)
		}
	}
	return vals
}

func (r *resample) emit(out operation.Emitter, s *series, t int64, vals []particle.Field) {
	if len(vals) == 0 {
		return
	}
	out.Emit(particle.Particle{Time: t, Measurement: s.measurement, Tags: s.tags, Fields: vals})
}

// ceilTo rounds t up to a multiple of d > 0: t%d has the sign of t, so
// t - t%d rounds towards zero, which is up for t < 0.
func ceilTo(t, d int64) int64 {
	r := t % d
	if r > 0 {
		r -= d
	}
	return t - r
}
