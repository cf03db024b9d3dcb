package ops

import (
	"context"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// NewStats returns a window operation that computes, per window and group,
// the aggregates of cfg for each field: mean, min, max, count, sum,
// stddev and percentiles. Each window and group gives one particle,
// stamped with the window's End (the end of [Start, End): a ten-minute
// window from 10:00 to 10:10 gives a particle at 10:10), carrying the
// group's tags and one field per field and aggregate (fields absent from
// the window are left out).
//
// stddev is the sample standard deviation, sqrt(sum((x - mean)^2) /
// (n - 1)), left out of windows with fewer than two values. pNN is the
// nearest-rank percentile: the value at rank ceil(NN/100 * n) of the
// window's n values in ascending order, always one of the values (p50 of
// 1, 2, 3, 4 is 2; p7 of 1..100 is 7; p100 is the maximum); median is p50.
// The rank is computed exactly from NN as written, not in floating point.
func NewStats(cfg StatsConfig) (operation.Operation, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &statsAgg{fields: cfg.Fields, by: cfg.By, measurement: cfg.Measurement}
	for _, a := range cfg.Aggregates {
		agg, _ := parseAggregate(a)
		s.aggs = append(s.aggs, agg)
		s.keep = s.keep || agg.kind == aggPercentile
	}
	return operation.Aggregate(cfg.Batcher(), operation.ByTags(cfg.By...), s), nil
}

type statsAgg struct {
	fields      []string
	by          []string
	measurement string
	aggs        []aggregate
	keep        bool // keep values for percentiles
}

type statsAcc struct {
	measurement string
	tags        []particle.Tag
	fields      []fieldStats
}

// fieldStats folds the values of one field: Welford's running mean and
// sum of squared deviations keep stddev accurate.
type fieldStats struct {
	name          string
	n             int
	sum, mean, m2 float64
	min, max      float64
	values        []float64
}

func (s *statsAgg) New() *statsAcc { return nil }

func (s *statsAgg) Add(acc *statsAcc, p *particle.Particle) (*statsAcc, error) {
	if acc == nil {
		acc = &statsAcc{measurement: s.measurement, tags: groupTags(p, s.by)}
		if acc.measurement == "" {
			acc.measurement = p.Measurement
		}
		for _, f := range s.fields {
			acc.fields = append(acc.fields, fieldStats{name: f})
		}
	}
	if len(s.fields) > 0 {
		for i := range acc.fields {
			if v, ok := p.Field(acc.fields[i].name); ok {
				if x, ok := number(v); ok {
					acc.fields[i].add(x, s.keep)
				}
			}
		}
		return acc, nil
	}
	for _, f := range p.Fields {
		x, ok := number(f.Value)
		if !ok {
			continue
		}
		i := slices.IndexFunc(acc.fields, func(fs fieldStats) bool { return fs.name == f.Key })
		if i < 0 {
			acc.fields = append(acc.fields, fieldStats{name: f.Key})
			i = len(acc.fields) - 1
		}
		acc.fields[i].add(x, s.keep)
	}
	return acc, nil
}

func (f *fieldStats) add(x float64, keep bool) {
	if f.n == 0 {
		f.min, f.max = x, x
	}
	f.n++
	f.sum += x
	d := x - f.mean
	f.mean += d / float64(f.n)
	f.m2 += d * (x - f.mean)
	f.min, f.max = min(f.min, x), max(f.max, x)
	if keep {
		f.values = append(f.values, x)
	}
}

// ResultTime implements operation.ResultTimer: results carry the window's end.
func (s *statsAgg) ResultTime(w operation.Window) int64 { return w.End }

func (s *statsAgg) Result(_ context.Context, w operation.Window, _ string, acc *statsAcc, out operation.Emitter) error {
	if acc == nil {
		return nil
	}
	r := particle.Particle{Time: w.End, Measurement: acc.measurement, Tags: acc.tags}
	for i := range acc.fields {
		f := &acc.fields[i]
		if f.n == 0 {
			continue
		}
		if f.values != nil {
			slices.Sort(f.values)
		}
		for _, a := range s.aggs {
			if v, ok := f.result(a); ok {
				r.Fields = append(r.Fields, particle.Field{Key: f.name + "_" + a.name, Value: v})
			}
		}
	}
	if len(r.Fields) > 0 {
		out.Emit(r)
	}
	return nil
}

func (f *fieldStats) result(a aggregate) (particle.Value, bool) {
	switch a.kind {
	case aggMean:
		return particle.Float(f.sum / float64(f.n)), true
	case aggMin:
		return particle.Float(f.min), true
	case aggMax:
		return particle.Float(f.max), true
	case aggCount:
		return particle.Int(int64(f.n)), true
	case aggSum:
		return particle.Float(f.sum), true
	case aggStddev:
		if f.n < 2 {
			return particle.Value{}, false
		}
		return particle.Float(math.Sqrt(f.m2 / float64(f.n-1))), true
	case aggPercentile:
		return particle.Float(percentile(f.values, a.pct)), true
	}
	return particle.Value{}, false
}

// percentile returns the nearest-rank percentile p of sorted values.
func percentile(sorted []float64, p float64) float64 {
	return sorted[nearestRank(p, len(sorted))-1]
}

// nearestRank returns ceil(p/100 * n), at least 1, computed exactly: in
// floating point 7.0/100*100 is a little more than 7, which made p7 of
// 1..100 the 8th value. p was parsed from decimal text (p7, p99.9), which
// its shortest decimal form gives back.
func nearestRank(p float64, n int) int {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(p, 'f', -1, 64))
	if !ok {
		return n
	}
	r.Mul(r, big.NewRat(int64(n), 100))
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	rank := int(q.Int64())
	if m.Sign() > 0 {
		rank++
	}
	return min(max(rank, 1), n)
}
