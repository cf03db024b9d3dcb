package statuspage

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Defaults for TapConfig.
const (
	DefaultMaxSeries     = 64
	DefaultPointsPerTick = 4
	DefaultHistory       = 60
	DefaultMaxFields     = 8
)

// TapConfig bounds what a Tap keeps. The zero TapConfig takes the
// defaults.
type TapConfig struct {
	// MaxSeries bounds the series followed; particles of other series are
	// only counted (Snapshot.Unfollowed). Defaults to DefaultMaxSeries.
	MaxSeries int
	// PointsPerTick bounds the points, and separately the marks, that a
	// series takes between two calls of Tick: with the page's one tick a
	// second, points per second. Defaults to DefaultPointsPerTick.
	PointsPerTick int
	// History is how many recent points, and marks, a series keeps.
	// Defaults to DefaultHistory.
	History int
	// MaxFields bounds the numeric fields a series keeps, the first seen.
	// Defaults to DefaultMaxFields.
	MaxFields int
}

func (c *TapConfig) setDefaults() {
	if c.MaxSeries <= 0 {
		c.MaxSeries = DefaultMaxSeries
	}
	if c.PointsPerTick <= 0 {
		c.PointsPerTick = DefaultPointsPerTick
	}
	if c.History <= 0 {
		c.History = DefaultHistory
	}
	if c.MaxFields <= 0 {
		c.MaxFields = DefaultMaxFields
	}
}

// Tap samples the particles a run's sources emit, per series, and counts
// the dead letters of each component, for the page. Install it with
// [Tap.Source] around source factories and [Tap.DeadLetters] around the
// topology's dead-letter sink.
//
// While no one watches (see [Tap.Watch]), a particle costs one atomic
// load. While someone does, each particle is looked up by a hash of its
// measurement and tags under a mutex, and a series takes at most
// PointsPerTick points between two ticks, so the sample's size does not
// depend on the rate; at most TapConfig.MaxSeries series are followed,
// and the others only counted. Wrapping the dead-letter sink with
// DeadLetters marks late and invalid particles on their series' plot,
// next to the particles that were dead-lettered, and counts dead letters
// per component. It is safe for concurrent use.
type Tap struct {
	cfg      TapConfig
	watchers atomic.Int32

	mu         sync.Mutex
	epoch      uint64
	series     map[uint64]*series
	unfollowed uint64
	dead       map[string]uint64 // dead letters by component
}

// series is one followed series: its identity and a ring of recent points
// and marks.
type series struct {
	measurement string
	tags        []particle.Tag
	fields      []string

	epoch uint64 // of taken
	taken [2]int // points and marks taken in epoch: takePoint, takeMark

	ring     []Point
	head     int // next slot of ring once full
	marks    []Mark
	markHead int
}

// Point is one sampled particle: its event time in milliseconds since the
// Unix epoch and its numeric fields, in the order of Series.Fields; NaN
// where the particle lacked the field. It encodes as a JSON array, NaN as
// null: [time, v1, v2, ...].
type Point struct {
	T int64
	V []float64
}

// MarshalJSON implements json.Marshaler.
func (p Point) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 16+12*len(p.V))
	b = append(b, '[')
	b = strconv.AppendInt(b, p.T, 10)
	for _, v := range p.V {
		b = append(b, ',')
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (p *Point) UnmarshalJSON(b []byte) error {
	var a []*float64
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if len(a) == 0 || a[0] == nil {
		return errNoPointTime
	}
	p.T, p.V = int64(*a[0]), make([]float64, len(a)-1)
	for i, v := range a[1:] {
		p.V[i] = math.NaN()
		if v != nil {
			p.V[i] = *v
		}
	}
	return nil
}

var errNoPointTime = errors.New("statuspage: a point needs a time")

// Mark is a particle of a series that was dead-lettered: late, invalid,
// given up on. T is its event time in milliseconds since the Unix epoch.
type Mark struct {
	T      int64  `json:"t"`
	Reason string `json:"reason"`
}

// Series is what a Tap holds of one series.
type Series struct {
	// Key is the series in line-protocol form: measurement,tag=value,...
	Key    string   `json:"key"`
	Fields []string `json:"fields"`
	// Points and Marks are the recent ones, oldest first.
	Points []Point `json:"points"`
	Marks  []Mark  `json:"marks"`
}

// NewTap returns a Tap bounded by cfg.
func NewTap(cfg TapConfig) *Tap {
	cfg.setDefaults()
	return &Tap{cfg: cfg, series: map[uint64]*series{}, dead: map[string]uint64{}}
}

// Watch makes the tap sample until release is called; calls nest. The
// page's server watches while a client is connected.
func (t *Tap) Watch() (release func()) {
	t.watchers.Add(1)
	var once sync.Once
	return func() { once.Do(func() { t.watchers.Add(-1) }) }
}

// Tick starts a new sampling period: every series may take PointsPerTick
// points and marks again.
func (t *Tap) Tick() {
	t.mu.Lock()
	t.epoch++
	t.mu.Unlock()
}

// Offer samples p if someone watches and its series has room this tick.
// It keeps nothing of p but copies.
func (t *Tap) Offer(p *particle.Particle) {
	if t.watchers.Load() == 0 {
		return // the common case, without building the closure
	}
	t.take(p, takePoint, func(s *series) { s.add(p, t.cfg) })
}

// mark records that p was dead-lettered for reason, within the tick's
// limit.
func (t *Tap) mark(p *particle.Particle, reason string) {
	t.take(p, takeMark, func(s *series) { s.addMark(Mark{T: p.Time / 1e6, Reason: reason}, t.cfg.History) })
}

// What a series takes, each up to PointsPerTick a tick.
const (
	takePoint = iota
	takeMark
)

// take calls keep with p's series, under mu, if someone watches and the
// series may take one more of what this tick.
func (t *Tap) take(p *particle.Particle, what int, keep func(*series)) {
	if t.watchers.Load() == 0 || p.Meta != nil {
		return
	}
	h := seriesHash(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.lookup(h, p)
	if s == nil {
		return
	}
	if s.epoch != t.epoch {
		s.epoch, s.taken = t.epoch, [2]int{}
	}
	if s.taken[what] >= t.cfg.PointsPerTick {
		return
	}
	s.taken[what]++
	keep(s)
}

// lookup returns p's series, following it if there is room, or nil.
// Two series whose hashes collide count as one unfollowed.
func (t *Tap) lookup(h uint64, p *particle.Particle) *series {
	s, ok := t.series[h]
	switch {
	case ok && s.is(p):
		return s
	case ok || len(t.series) >= t.cfg.MaxSeries:
		t.unfollowed++
		return nil
	}
	s = &series{measurement: p.Measurement, tags: slices.Clone(p.Tags), epoch: t.epoch}
	t.series[h] = s
	return s
}

// DeadLetters returns a dead-letter sink that counts each dead letter for
// its component, marks its series when it carries a particle, and hands it
// on to next (nil: to no one). A nil Tap returns next, so that a command
// installs its tap only when it serves the page.
func (t *Tap) DeadLetters(next topology.DeadLetterSink) topology.DeadLetterSink {
	if t == nil {
		return next
	}
	return topology.DeadLetterFunc(func(ctx context.Context, d topology.DeadLetter) {
		t.mu.Lock()
		t.dead[d.Component]++
		t.mu.Unlock()
		if d.Particle != nil {
			t.mark(d.Particle, d.Reason)
		}
		if next != nil {
			next.DeadLetter(ctx, d)
		}
	})
}

// Source returns a source factory whose sources offer every particle they
// emit to the tap. A source that is a topology.Acknowledger or a
// topology.BatchAcknowledger stays one. A nil Tap returns f.
func (t *Tap) Source(f topology.SourceFactory) topology.SourceFactory {
	if t == nil {
		return f
	}
	return func(instance int) topology.Source {
		src := f(instance)
		tapped := tappedSource{src: src, tap: t}
		switch a := src.(type) {
		case topology.BatchAcknowledger:
			return tappedBatchAcknowledger{tappedSource: tapped, BatchAcknowledger: a}
		case topology.Acknowledger:
			return tappedAcknowledger{tappedSource: tapped, Acknowledger: a}
		}
		return tapped
	}
}

type tappedSource struct {
	src topology.Source
	tap *Tap
}

// Unwrap implements topology.Wrapper: the engine finds the source's
// position through the tap.
func (s tappedSource) Unwrap() topology.Source { return s.src }

func (s tappedSource) Run(ctx context.Context, out topology.SourceEmitter) error {
	return s.src.Run(ctx, tappedEmitter{SourceEmitter: out, tap: s.tap})
}

type tappedAcknowledger struct {
	tappedSource
	topology.Acknowledger
}

type tappedBatchAcknowledger struct {
	tappedSource
	topology.BatchAcknowledger
}

type tappedEmitter struct {
	topology.SourceEmitter
	tap *Tap
}

func (e tappedEmitter) Emit(p particle.Particle) error {
	e.tap.Offer(&p)
	return e.SourceEmitter.Emit(p)
}

func (e tappedEmitter) EmitTracked(p particle.Particle, msgID uint64) error {
	e.tap.Offer(&p)
	return e.SourceEmitter.EmitTracked(p, msgID)
}

// TapSnapshot is what a Tap holds at one moment.
type TapSnapshot struct {
	// Series are sorted by key.
	Series []Series `json:"series"`
	// Unfollowed counts the particles offered of series beyond
	// MaxSeries.
	Unfollowed uint64 `json:"unfollowed"`
	// DeadLetters counts the dead letters of each component.
	DeadLetters map[string]uint64 `json:"dead_letters"`
}

// Snapshot returns copies of what the tap holds.
func (t *Tap) Snapshot() TapSnapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	snap := TapSnapshot{Unfollowed: t.unfollowed, DeadLetters: make(map[string]uint64, len(t.dead))}
	for c, n := range t.dead {
		snap.DeadLetters[c] = n
	}
	for _, s := range t.series {
		snap.Series = append(snap.Series, s.snapshot())
	}
	slices.SortFunc(snap.Series, func(a, b Series) int { return cmp.Compare(a.Key, b.Key) })
	return snap
}

// is tells whether p belongs to s.
func (s *series) is(p *particle.Particle) bool {
	return s.measurement == p.Measurement && slices.Equal(s.tags, p.Tags)
}

// addMark appends m, keeping the history newest.
func (s *series) addMark(m Mark, history int) {
	if len(s.marks) < history {
		s.marks = append(s.marks, m)
		return
	}
	s.marks[s.markHead] = m
	s.markHead = (s.markHead + 1) % len(s.marks)
}

// add appends p as a point, reusing the slot it overwrites.
func (s *series) add(p *particle.Particle, cfg TapConfig) {
	for _, f := range p.Fields {
		if _, ok := f.Value.Number(); ok && len(s.fields) < cfg.MaxFields && !slices.Contains(s.fields, f.Key) {
			s.fields = append(s.fields, f.Key)
		}
	}
	var pt *Point
	if len(s.ring) < cfg.History {
		s.ring = append(s.ring, Point{})
		pt = &s.ring[len(s.ring)-1]
	} else {
		pt = &s.ring[s.head]
		s.head = (s.head + 1) % len(s.ring)
	}
	pt.T = p.Time / 1e6
	pt.V = pt.V[:0]
	for _, name := range s.fields {
		v := math.NaN()
		if val, ok := p.Field(name); ok {
			if n, ok := val.Number(); ok {
				v = n
			}
		}
		pt.V = append(pt.V, v)
	}
}

// snapshot copies s, oldest points first, every point as wide as the
// fields known now.
func (s *series) snapshot() Series {
	out := Series{Key: seriesKey(s.measurement, s.tags), Fields: slices.Clone(s.fields), Points: []Point{}, Marks: []Mark{}}
	for i := range s.ring {
		p := s.ring[(s.head+i)%len(s.ring)]
		v := make([]float64, len(s.fields))
		for j := range v {
			v[j] = math.NaN()
		}
		copy(v, p.V)
		out.Points = append(out.Points, Point{T: p.T, V: v})
	}
	for i := range s.marks {
		out.Marks = append(out.Marks, s.marks[(s.markHead+i)%len(s.marks)])
	}
	return out
}

// seriesKey writes a series as line protocol writes it, without escaping:
// the page shows it, nothing parses it.
func seriesKey(measurement string, tags []particle.Tag) string {
	var b strings.Builder
	b.WriteString(measurement)
	for _, t := range tags {
		b.WriteByte(',')
		b.WriteString(t.Key)
		b.WriteByte('=')
		b.WriteString(t.Value)
	}
	return b.String()
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// seriesHash is FNV-1a over p's measurement and tags, with separators,
// computed without allocating.
func seriesHash(p *particle.Particle) uint64 {
	h := uint64(fnvOffset)
	add := func(s string) {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * fnvPrime
		}
		h = (h ^ 0xff) * fnvPrime
	}
	add(p.Measurement)
	for _, t := range p.Tags {
		add(t.Key)
		add(t.Value)
	}
	return h
}
