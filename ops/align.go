package ops

import (
	"context"
	"slices"
	"strings"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// NewAlign returns an operation that aligns the streams of several sensors
// by time: the particles falling in the same bucket [k*Bucket,
// (k+1)*Bucket) become one particle stamped with the bucket's start, whose
// fields are the sensors' fields named sensor + Separator + field (for
// example 20_temperature), sorted by name. A sensor's later reading in a
// bucket overrides its earlier one. The output keeps the tags that every
// particle of the bucket shares, except the sensor tags. A bucket is
// emitted when the watermark passes its end, anchored to all its readings.
func NewAlign(cfg AlignConfig) (operation.Operation, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &aligner{cfg: cfg, sensor: operation.ByTags(cfg.Sensor...)}
	return operation.Aggregate(operation.Tumbling(cfg.Bucket), nil, a), nil
}

type aligner struct {
	cfg    AlignConfig
	sensor operation.KeyFunc
}

type alignAcc struct {
	measurement string
	tags        []particle.Tag
	fields      []particle.Field
}

func (a *aligner) New() *alignAcc { return nil }

func (a *aligner) Add(acc *alignAcc, p *particle.Particle) (*alignAcc, error) {
	if acc == nil {
		acc = &alignAcc{measurement: a.cfg.Measurement}
		if acc.measurement == "" {
			acc.measurement = p.Measurement
		}
		for _, t := range p.Tags {
			if !slices.Contains(a.cfg.Sensor, t.Key) {
				acc.tags = append(acc.tags, t)
			}
		}
	} else {
		acc.tags = slices.DeleteFunc(acc.tags, func(t particle.Tag) bool {
			v, ok := p.Tag(t.Key)
			return !ok || v != t.Value
		})
	}
	prefix := strings.ReplaceAll(a.sensor(p), "\x00", a.cfg.Separator) + a.cfg.Separator
	for _, f := range p.Fields {
		if len(a.cfg.Fields) > 0 && !slices.Contains(a.cfg.Fields, f.Key) {
			continue
		}
		name := prefix + f.Key
		if i := slices.IndexFunc(acc.fields, func(g particle.Field) bool { return g.Key == name }); i >= 0 {
			acc.fields[i].Value = f.Value
			continue
		}
		acc.fields = append(acc.fields, particle.Field{Key: name, Value: f.Value})
	}
	return acc, nil
}

func (a *aligner) Result(_ context.Context, w operation.Window, _ string, acc *alignAcc, out operation.Emitter) error {
	if acc == nil || len(acc.fields) == 0 {
		return nil
	}
	slices.SortFunc(acc.fields, func(x, y particle.Field) int { return strings.Compare(x.Key, y.Key) })
	out.Emit(particle.Particle{Time: w.Start, Measurement: acc.measurement, Tags: acc.tags, Fields: acc.fields})
	return nil
}
