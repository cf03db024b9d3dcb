package ops

import (
	"context"
	"math"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// Alert states, the value of an alert particle's "state" field.
const (
	AlertFiring = "firing"
	AlertOK     = "ok"
)

// NewThreshold returns an operation that watches a field per sensor and
// emits an alert particle when the field goes beyond a limit (state
// "firing") and when it comes back (state "ok"); nothing while the state
// holds, and nothing for a first reading within limits. An alert carries
// the sensor's tags, the tag alert=Name, and the fields field (the name),
// value and state; it is stamped with the reading's time. Readings without
// the field pass unnoticed.
func NewThreshold(cfg ThresholdConfig) (operation.Operation, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := newAlerter(cfg.Field, cfg.Name, cfg.Measurement, cfg.By)
	above, below := math.Inf(1), math.Inf(-1)
	if cfg.Above != nil {
		above = *cfg.Above
	}
	if cfg.Below != nil {
		below = *cfg.Below
	}
	a.check = func(_ *alertState, _ int64, v float64) (bool, particle.Field, bool) {
		return v > above || v < below, particle.Field{}, true
	}
	return a, nil
}

// NewRateOfChange returns an operation that watches how fast a field
// changes per sensor, in units per second between consecutive readings,
// and emits an alert like [NewThreshold] when the rate's magnitude goes
// above Max and when it comes back. Its alerts also carry the field rate.
// Readings at the same time as the previous one are skipped.
func NewRateOfChange(cfg RateConfig) (operation.Operation, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := newAlerter(cfg.Field, cfg.Name, cfg.Measurement, cfg.By)
	a.check = func(s *alertState, t int64, v float64) (bool, particle.Field, bool) {
		if s.seen && t <= s.lastT {
			return false, particle.Field{}, false
		}
		first, lastT, lastV := !s.seen, s.lastT, s.lastV
		s.seen, s.lastT, s.lastV = true, t, v
		if first {
			return false, particle.Field{}, false
		}
		rate := (v - lastV) / (float64(t-lastT) / 1e9)
		return math.Abs(rate) > cfg.Max, particle.Field{Key: "rate", Value: particle.Float(rate)}, true
	}
	return a, nil
}

type alerter struct {
	field, name, measurement string
	by                       []string
	key                      operation.KeyFunc
	state                    map[string]*alertState
	// check reports whether a reading fires the alert, an extra field for
	// the alert, and whether the reading counts at all.
	check func(s *alertState, t int64, v float64) (firing bool, extra particle.Field, ok bool)
}

func newAlerter(field, name, measurement string, by []string) *alerter {
	return &alerter{field: field, by: by, key: operation.ByTags(by...), name: name, measurement: measurement, state: map[string]*alertState{}}
}

type alertState struct {
	firing bool
	seen   bool
	lastT  int64
	lastV  float64
}

func (a *alerter) Process(_ context.Context, in particle.Particle, out operation.Emitter) error {
	f, ok := in.Field(a.field)
	if !ok {
		return nil
	}
	v, ok := number(f)
	if !ok {
		return nil
	}
	var k string
	if a.key != nil {
		k = a.key(&in)
	}
	s := a.state[k]
	if s == nil {
		s = &alertState{}
		a.state[k] = s
	}
	firing, extra, ok := a.check(s, in.Time, v)
	if !ok || firing == s.firing {
		return nil
	}
	s.firing = firing
	state := AlertOK
	if firing {
		state = AlertFiring
	}
	tags := append(groupTags(&in, a.by), particle.Tag{Key: "alert", Value: a.name})
	r := particle.Particle{Time: in.Time, Measurement: a.measurement, Tags: tags, Fields: []particle.Field{
		{Key: "field", Value: particle.String(a.field)},
		{Key: "value", Value: particle.Float(v)},
		{Key: "state", Value: particle.String(state)},
	}}
	if extra.Key != "" {
		r.Fields = append(r.Fields, extra)
	}
	r.SortTags()
	out.Emit(r)
	return nil
}
