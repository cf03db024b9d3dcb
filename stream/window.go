package stream

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sensorstorm/sensorstorm/ops"
)

// Windows are the windows of Stream.Window, in event time unless counted:
// make them with Tumbling, Sliding, Session or CountWindow.
type Windows struct {
	size, slide, gap time.Duration
	count            int
}

// Tumbling returns windows of length size, one after the other.
func Tumbling(size time.Duration) Windows { return Windows{size: size} }

// Sliding returns windows of length size, one starting every slide.
func Sliding(size, slide time.Duration) Windows { return Windows{size: size, slide: slide} }

// Session returns windows per key that close after gap without particles.
func Session(gap time.Duration) Windows { return Windows{gap: gap} }

// CountWindow returns windows of n particles.
func CountWindow(n int) Windows { return Windows{count: n} }

// String describes w as in errors: tumbling 1m0s, session 30s, ...
func (w Windows) String() string {
	switch {
	case w.gap != 0:
		return fmt.Sprintf("session %v", w.gap)
	case w.count != 0:
		return fmt.Sprintf("count %d", w.count)
	case w.slide != 0:
		return fmt.Sprintf("sliding %v every %v", w.size, w.slide)
	}
	return fmt.Sprintf("tumbling %v", w.size)
}

// Aggregation is a statistic that Stream.Window computes over fields, all
// numeric fields when none are named: make it with Mean, Min, Max, Count,
// Sum, Stddev, Median or Percentile. Its results are fields named
// field_aggregate, such as temperature_mean or temperature_p95.
type Aggregation struct {
	name   string
	fields []string
}

// Mean is the mean of the fields in each window.
func Mean(fields ...string) Aggregation { return Aggregation{"mean", fields} }

// Min is the smallest value of the fields in each window.
func Min(fields ...string) Aggregation { return Aggregation{"min", fields} }

// Max is the largest value of the fields in each window.
func Max(fields ...string) Aggregation { return Aggregation{"max", fields} }

// Count is the number of values of the fields in each window.
func Count(fields ...string) Aggregation { return Aggregation{"count", fields} }

// Sum is the sum of the fields in each window.
func Sum(fields ...string) Aggregation { return Aggregation{"sum", fields} }

// Stddev is the sample standard deviation of the fields in each window.
func Stddev(fields ...string) Aggregation { return Aggregation{"stddev", fields} }

// Median is the nearest-rank median of the fields in each window.
func Median(fields ...string) Aggregation { return Aggregation{"median", fields} }

// Percentile is the nearest-rank percentile p, in (0, 100], of the fields
// in each window; its results are named field_pP, such as
// temperature_p99.9.
func Percentile(p float64, fields ...string) Aggregation {
	return Aggregation{"p" + strconv.FormatFloat(p, 'g', -1, 64), fields}
}

// statsConfig returns the configuration of ops.NewStats that
// computes aggs over w per key. One NewStats computes every aggregate of
// every field, so aggs must name the same fields.
func statsConfig(w Windows, aggs []Aggregation, key []string) (ops.StatsConfig, error) {
	cfg := ops.StatsConfig{Size: w.size, Slide: w.slide, Gap: w.gap, Count: w.count, By: key}
	if len(aggs) == 0 {
		return cfg, fmt.Errorf("%v: no aggregation: give Mean, Max, ...", w)
	}
	cfg.Fields = aggs[0].fields
	for _, a := range aggs {
		if !slices.Equal(a.fields, cfg.Fields) {
			return cfg, fmt.Errorf("%v: %s of [%s] and %s of [%s]: the aggregations of a window take the same fields; use a window each",
				w, aggs[0].name, strings.Join(cfg.Fields, " "), a.name, strings.Join(a.fields, " "))
		}
		cfg.Aggregates = append(cfg.Aggregates, a.name)
	}
	return cfg, nil
}
