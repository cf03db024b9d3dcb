package ops

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sensorstorm/sensorstorm/operation"
)

// Defaults of the built-in operations' configurations.
const (
	// DefaultAggregate is the aggregate of a StatsConfig without any.
	DefaultAggregate = "mean"
	// DefaultAlertMeasurement is the measurement of alert particles.
	DefaultAlertMeasurement = "alert"
	// DefaultDedupWithin is how long Dedup remembers an identity.
	DefaultDedupWithin = time.Minute
	// DefaultResampleMethod is Resample's method.
	DefaultResampleMethod = ResampleLast
	// DefaultAlignSeparator joins a sensor id and a field name in Align.
	DefaultAlignSeparator = "_"
)

// StatsConfig configures [NewStats]: per-window aggregates of fields. Set
// exactly one of Size (tumbling or sliding windows), Gap (session windows)
// or Count (count windows).
type StatsConfig struct {
	// Size is the length of time windows.
	Size time.Duration `yaml:"size"`
	// Slide makes time windows slide: one starts every Slide. Defaults to
	// Size (tumbling windows).
	Slide time.Duration `yaml:"slide"`
	// Gap makes session windows that close after Gap without particles.
	Gap time.Duration `yaml:"gap"`
	// Count makes windows of Count particles.
	Count int `yaml:"count"`
	// Fields are the fields aggregated. Defaults to every numeric field.
	Fields []string `yaml:"fields"`
	// By are the tags (or fields) that group particles; each group has its
	// own windows, and its results carry these tags. Defaults to one group.
	By []string `yaml:"by"`
	// Aggregates are computed for every field: mean, min, max, count,
	// sum, stddev (sample), median, or pNN for the NN-th percentile
	// (nearest rank), for example p95 or p99.9. A result field is named
	// field_aggregate, for example temperature_mean. Defaults to
	// DefaultAggregate.
	Aggregates []string `yaml:"aggregates"`
	// Measurement names the results. Defaults to the measurement of each
	// window's first particle.
	Measurement string `yaml:"measurement"`
}

func (c *StatsConfig) setDefaults() {
	if c.Size > 0 && c.Slide == 0 {
		c.Slide = c.Size
	}
	if len(c.Aggregates) == 0 {
		c.Aggregates = []string{DefaultAggregate}
	}
}

// Validate reports the problems of c with its defaults applied, as the
// constructor applies them; c itself is left as it is.
func (c *StatsConfig) Validate() error {
	d := *c
	d.setDefaults()
	c = &d
	var errs []error
	set := 0
	for _, on := range []bool{c.Size != 0, c.Gap != 0, c.Count != 0} {
		if on {
			set++
		}
	}
	switch {
	case set != 1:
		errs = append(errs, errors.New("set exactly one of size, gap and count"))
	case c.Size < 0 || c.Gap < 0 || c.Count < 0:
		errs = append(errs, errors.New("size, gap and count must be positive"))
	case c.Size > 0 && (c.Slide <= 0 || c.Slide > c.Size):
		errs = append(errs, fmt.Errorf("slide %v must be in (0, size %v]", c.Slide, c.Size))
	case c.Size == 0 && c.Slide != 0:
		errs = append(errs, errors.New("slide needs size"))
	}
	for _, a := range c.Aggregates {
		if _, err := parseAggregate(a); err != nil {
			errs = append(errs, err)
		}
	}
	return wrapInvalid(errs)
}

// Batcher returns the windows c describes; c must be valid.
func (c *StatsConfig) Batcher() operation.Batcher {
	switch {
	case c.Gap > 0:
		return operation.Session(c.Gap)
	case c.Count > 0:
		return operation.Count(c.Count)
	case c.Slide > 0 && c.Slide < c.Size:
		return operation.Sliding(c.Size, c.Slide)
	}
	return operation.Tumbling(c.Size)
}

// aggregate is one statistic: kind, and the percentile for kind pct.
type aggregate struct {
	name string
	kind aggKind
	pct  float64
}

type aggKind uint8

const (
	aggMean aggKind = iota
	aggMin
	aggMax
	aggCount
	aggSum
	aggStddev
	aggPercentile
)

// Aggregates lists the names NewStats accepts besides pNN.
var aggregateNames = map[string]aggKind{
	"mean": aggMean, "min": aggMin, "max": aggMax, "count": aggCount,
	"sum": aggSum, "stddev": aggStddev,
}

func parseAggregate(s string) (aggregate, error) {
	if k, ok := aggregateNames[s]; ok {
		return aggregate{name: s, kind: k}, nil
	}
	if s == "median" {
		return aggregate{name: s, kind: aggPercentile, pct: 50}, nil
	}
	if rest, ok := strings.CutPrefix(s, "p"); ok {
		if p, err := strconv.ParseFloat(rest, 64); err == nil && p > 0 && p <= 100 {
			return aggregate{name: s, kind: aggPercentile, pct: p}, nil
		}
	}
	return aggregate{}, fmt.Errorf("unknown aggregate %q (known: count, max, mean, median, min, stddev, sum, pNN)", s)
}

// ThresholdConfig configures [NewThreshold]: an alert when a field goes
// above or below a limit.
type ThresholdConfig struct {
	// Field is the field watched. Required.
	Field string `yaml:"field"`
	// Above and Below are the limits; at least one is required. A value
	// strictly above Above or strictly below Below fires the alert.
	Above *float64 `yaml:"above"`
	Below *float64 `yaml:"below"`
	// By are the tags (or fields) that identify a sensor: each has its own
	// alert state, and alerts carry these tags. Defaults to one state.
	By []string `yaml:"by"`
	// Name is the value of the alerts' "alert" tag. Defaults to
	// "threshold".
	Name string `yaml:"name"`
	// Measurement names the alerts. Defaults to DefaultAlertMeasurement.
	Measurement string `yaml:"measurement"`
}

func (c *ThresholdConfig) setDefaults() { setAlertDefaults(&c.Name, &c.Measurement, "threshold") }

// Validate reports the problems of c with its defaults applied, as the
// constructor applies them; c itself is left as it is.
func (c *ThresholdConfig) Validate() error {
	d := *c
	d.setDefaults()
	c = &d
	var errs []error
	if c.Field == "" {
		errs = append(errs, errors.New("field is required"))
	}
	if c.Above == nil && c.Below == nil {
		errs = append(errs, errors.New("set above, below or both"))
	}
	if c.Above != nil && c.Below != nil && *c.Below > *c.Above {
		errs = append(errs, fmt.Errorf("below %g is above above %g: the alert would always fire", *c.Below, *c.Above))
	}
	return wrapInvalid(errs)
}

// setAlertDefaults defaults an alert's name to def and its measurement to
// DefaultAlertMeasurement.
func setAlertDefaults(name, measurement *string, def string) {
	if *name == "" {
		*name = def
	}
	if *measurement == "" {
		*measurement = DefaultAlertMeasurement
	}
}

// RateConfig configures [NewRateOfChange]: an alert when a field changes
// faster than a limit.
type RateConfig struct {
	// Field is the field watched. Required.
	Field string `yaml:"field"`
	// Max is the largest change per second, up or down, that does not
	// fire the alert. Required, positive.
	Max float64 `yaml:"max"`
	// By are the tags (or fields) that identify a sensor. Defaults to one
	// sensor.
	By []string `yaml:"by"`
	// Name is the value of the alerts' "alert" tag. Defaults to "rate".
	Name string `yaml:"name"`
	// Measurement names the alerts. Defaults to DefaultAlertMeasurement.
	Measurement string `yaml:"measurement"`
}

func (c *RateConfig) setDefaults() { setAlertDefaults(&c.Name, &c.Measurement, "rate") }

// Validate reports the problems of c with its defaults applied, as the
// constructor applies them; c itself is left as it is.
func (c *RateConfig) Validate() error {
	d := *c
	d.setDefaults()
	c = &d
	var errs []error
	if c.Field == "" {
		errs = append(errs, errors.New("field is required"))
	}
	if c.Max <= 0 {
		errs = append(errs, fmt.Errorf("max %g must be positive", c.Max))
	}
	return wrapInvalid(errs)
}

// DedupConfig configures [NewDedup].
type DedupConfig struct {
	// By are the tags (or fields) whose values identify a reading, for
	// example node and seq. Defaults to the measurement, every tag and
	// every field value: exact copies, whatever their timestamps.
	By []string `yaml:"by"`
	// Within is how long, in event time after it was first seen, an
	// identity is remembered. Defaults to DefaultDedupWithin.
	Within time.Duration `yaml:"within"`
}

func (c *DedupConfig) setDefaults() {
	if c.Within == 0 {
		c.Within = DefaultDedupWithin
	}
}

// Validate reports the problems of c with its defaults applied, as the
// constructor applies them; c itself is left as it is.
func (c *DedupConfig) Validate() error {
	d := *c
	d.setDefaults()
	c = &d
	if c.Within < 0 {
		return wrapInvalid([]error{fmt.Errorf("within %v is negative", c.Within)})
	}
	return nil
}

// Resample methods.
const (
	// ResampleLast gives each point the latest value at or before it.
	ResampleLast = "last"
	// ResampleLinear interpolates linearly between the values around a
	// point.
	ResampleLinear = "linear"
)

// ResampleConfig configures [NewResample].
type ResampleConfig struct {
	// Every is the interval of the output points, aligned on the Unix
	// epoch. Required.
	Every time.Duration `yaml:"every"`
	// Fields are the fields resampled. Defaults to every numeric field.
	Fields []string `yaml:"fields"`
	// By are the tags (or fields) that identify a series. Defaults to one
	// series.
	By []string `yaml:"by"`
	// Method is ResampleLast or ResampleLinear. Defaults to
	// DefaultResampleMethod.
	Method string `yaml:"method"`
	// MaxGap leaves gaps longer than this between two readings unfilled.
	// Defaults to 0: every gap is filled.
	MaxGap time.Duration `yaml:"max_gap"`
}

func (c *ResampleConfig) setDefaults() {
	if c.Method == "" {
		c.Method = DefaultResampleMethod
	}
}

// Validate reports the problems of c with its defaults applied, as the
// constructor applies them; c itself is left as it is.
func (c *ResampleConfig) Validate() error {
	d := *c
	d.setDefaults()
	c = &d
	var errs []error
	if c.Every <= 0 {
		errs = append(errs, fmt.Errorf("every %v must be positive", c.Every))
	}
	if c.Method != ResampleLast && c.Method != ResampleLinear {
		errs = append(errs, fmt.Errorf("unknown method %q (known: last, linear)", c.Method))
	}
	if c.MaxGap < 0 {
		errs = append(errs, fmt.Errorf("max gap %v is negative", c.MaxGap))
	}
	return wrapInvalid(errs)
}

// AlignConfig configures [NewAlign].
type AlignConfig struct {
	// Bucket is the length of the time buckets, aligned on the Unix epoch.
	// Required.
	Bucket time.Duration `yaml:"bucket"`
	// Sensor are the tags (or fields) that identify a sensor. Required.
	Sensor []string `yaml:"sensor"`
	// Fields are the fields merged. Defaults to every field.
	Fields []string `yaml:"fields"`
	// Separator joins a sensor id and a field name into an output field
	// name, for example 20_temperature. Defaults to
	// DefaultAlignSeparator.
	Separator string `yaml:"separator"`
	// Measurement names the output. Defaults to the measurement of the
	// bucket's first particle.
	Measurement string `yaml:"measurement"`
}

func (c *AlignConfig) setDefaults() {
	if c.Separator == "" {
		c.Separator = DefaultAlignSeparator
	}
}

// Validate reports the problems of c with its defaults applied, as the
// constructor applies them; c itself is left as it is.
func (c *AlignConfig) Validate() error {
	d := *c
	d.setDefaults()
	c = &d
	var errs []error
	if c.Bucket <= 0 {
		errs = append(errs, fmt.Errorf("bucket %v must be positive", c.Bucket))
	}
	if len(c.Sensor) == 0 {
		errs = append(errs, errors.New("sensor (the tags naming a sensor) is required"))
	}
	return wrapInvalid(errs)
}

// FilterConfig configures [NewFilter], in the manner of Telegraf's
// namepass, tagpass and fieldpass. Patterns are path.Match globs. The zero
// FilterConfig passes everything.
type FilterConfig struct {
	// NamePass keeps only particles whose measurement matches a pattern;
	// NameDrop drops those that match one.
	NamePass []string `yaml:"namepass"`
	NameDrop []string `yaml:"namedrop"`
	// TagPass keeps only particles with, for some key, a tag value
	// matching one of its patterns; TagDrop drops those.
	TagPass map[string][]string `yaml:"tagpass"`
	TagDrop map[string][]string `yaml:"tagdrop"`
	// FieldPass keeps only the fields whose names match a pattern;
	// FieldDrop removes those that match. A particle left without fields
	// is dropped.
	FieldPass []string `yaml:"fieldpass"`
	FieldDrop []string `yaml:"fielddrop"`
}

// Validate reports malformed patterns.
func (c *FilterConfig) Validate() error {
	var errs []error
	check := func(pats []string) {
		for _, p := range pats {
			if _, err := path.Match(p, ""); err != nil {
				errs = append(errs, fmt.Errorf("pattern %q: %w", p, err))
			}
		}
	}
	check(c.NamePass)
	check(c.NameDrop)
	check(c.FieldPass)
	check(c.FieldDrop)
	for _, m := range []map[string][]string{c.TagPass, c.TagDrop} {
		for _, pats := range m {
			check(pats)
		}
	}
	return wrapInvalid(errs)
}

func wrapInvalid(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
}
