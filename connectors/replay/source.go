package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Source replays recordings into a topology, paced by their event time.
//
// The particle at event time t is emitted at wall time w0 + (t - e0)/speed,
// where (w0, e0) is the anchor: the first particle's emission, moved to
// the present by every speed change, pause and resume. Every emission is
// scheduled from the anchor, never from the previous emission, so lateness
// of the wall clock does not add up over a long replay. Particles that are
// due together are emitted together, without sleeping between them.
//
// SetSpeed, Pause, Resume, Now and Status are safe for concurrent use with
// Run and with each other. A Source is its run's stream clock (Now), so a
// change reaches every bolt instance at once; it is also announced
// downstream by a metaparticle.SpeedChange, for operations that want to
// know.
type Source struct {
	cfg  Config
	wall Wall
	wake chan struct{} // size one: a change made while Run is busy is seen at its next look

	mu sync.Mutex // guards the pacing state below
	pacing
	changes []metaparticle.SpeedChange

	// dirty says that pacing or changes moved since Run last looked.
	dirty atomic.Bool
	// last is the event time of the last particle emitted; hasLast tells
	// whether there is one.
	last    atomic.Int64
	hasLast atomic.Bool

	ran    atomic.Bool
	stats  counters
	inputs atomic.Pointer[[]input] // of the current pass, for progress
}

// pacing is the schedule: event time e0 is due at wall time w0, and time
// runs at speed from there unless paused.
type pacing struct {
	speed    Speed
	paused   bool
	anchored bool
	w0       time.Time
	e0       int64
}

// due returns the wall time at which event time t is due.
func (p *pacing) due(t int64) time.Time {
	d := float64(t - p.e0)
	if subSat(t, p.e0) != t-p.e0 {
		// Times far apart (near math.MinInt64 and math.MaxInt64): their
		// difference overflows int64, not float64.
		d = float64(t) - float64(p.e0)
	}
	return p.w0.Add(time.Duration(clampInt64(d / float64(p.speed))))
}

// position returns the event time that the schedule has reached at now;
// last is that of the last particle emitted, the position of an unpaced
// replay.
func (p *pacing) position(now time.Time, last int64) int64 {
	switch {
	case !p.anchored || p.speed == Max:
		return last
	case p.paused:
		return p.e0
	}
	return addSat(p.e0, clampInt64(float64(now.Sub(p.w0))*float64(p.speed)))
}

// clampInt64 converts f to int64, saturating at its limits: Go leaves
// the conversion of a float64 out of range undefined.
func clampInt64(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// addSat returns a+b, saturating at the int64 limits.
func addSat(a, b int64) int64 {
	if c, ok := addChecked(a, b); ok {
		return c
	}
	if b > 0 {
		return math.MaxInt64
	}
	return math.MinInt64
}

// subSat returns a-b, saturating at the int64 limits.
func subSat(a, b int64) int64 {
	c := a - b
	if (a^b)&(a^c) >= 0 {
		return c
	}
	if b < 0 {
		return math.MaxInt64
	}
	return math.MinInt64
}

// addChecked returns a+b and whether it did not overflow.
func addChecked(a, b int64) (int64, bool) {
	c := a + b
	return c, (a^c)&(b^c) >= 0
}

type counters struct {
	read, emitted, invalid, skipped, outside atomic.Uint64
	pass                                     atomic.Int64
	bytesTotal                               atomic.Int64
	done                                     atomic.Bool
	// first and last are the event times of the first pass's first and
	// last records, when spanKnown; shift moves them to the current pass.
	first, last, shift atomic.Int64
	spanKnown          atomic.Bool
}

var (
	_ topology.Source   = (*Source)(nil)
	_ streamclock.Clock = (*Source)(nil)
)

// New returns a Source for cfg.
func New(cfg Config) (*Source, error) {
	cfg.Inputs = slices.Clone(cfg.Inputs)
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Source{cfg: cfg, wall: cfg.Wall, wake: make(chan struct{}, 1)}
	s.speed = cfg.Speed
	return s, nil
}

// SetSpeed changes the speed from now on: event time reached so far is
// kept, and the rest follows at the new speed. While paused, the new speed
// applies from Resume.
func (s *Source) SetSpeed(speed Speed) error {
	if err := speed.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if speed == s.speed {
		return nil
	}
	s.rebase()
	s.speed = speed
	if !s.paused {
		s.announce()
	}
	return nil
}

// Pause stops emission until Resume. It does nothing if paused already.
func (s *Source) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused {
		return
	}
	s.rebase()
	s.paused = true
	s.announce()
}

// Resume goes on where Pause stopped. It does nothing if not paused.
func (s *Source) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.paused {
		return
	}
	s.rebase()
	s.paused = false
	s.announce()
}

// rebase moves the anchor to the present, so that a change applies from
// now on. s.mu is held.
func (s *Source) rebase() {
	if !s.anchored {
		return
	}
	now := s.wall.Now()
	s.e0 = s.pacing.position(now, s.last.Load())
	s.w0 = now
}

// announce queues the SpeedChange of the current state and wakes Run.
// s.mu is held.
func (s *Source) announce() {
	s.changes = append(s.changes, metaparticle.SpeedChange{Speed: float64(s.speed), Paused: s.paused})
	s.dirty.Store(true)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run replays the inputs into out and returns nil at their end (or, with
// Loop, when ctx is cancelled). Malformed records are rejected through
// out, naming file, line and column, and the replay goes on. A Source
// runs once: a second Run returns ErrRan.
func (s *Source) Run(ctx context.Context, out topology.SourceEmitter) error {
	if s.ran.Swap(true) {
		return ErrRan
	}
	s.start()
	defer s.stats.done.Store(true)
	r := runner{Source: s, out: out}
	for pass := 0; ; pass++ {
		s.stats.pass.Store(int64(pass))
		n, err := r.pass(ctx, pass)
		if err != nil || !s.cfg.Loop || n == 0 || ctx.Err() != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				err = nil
			}
			return err
		}
	}
}

// start announces the speed with the first particle, so that bolts follow
// the source whatever the speed of their own clocks' configuration.
func (s *Source) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes = append(s.changes[:0], metaparticle.SpeedChange{Speed: float64(s.speed), Paused: s.paused})
	s.dirty.Store(true)
}

// runner is the state of one Run.
type runner struct {
	*Source
	out       topology.SourceEmitter
	pace      pacing    // Run's copy of the pacing state
	now       time.Time // the wall clock when last read
	unflushed bool
	emitted   bool // whether hasLast was set

	// the first pass's extent, for the shift of the next passes
	first, lastT, gap int64
	shift             int64

	// high is the newest event time emitted; wild a record that jumped
	// beyond it by more than the future bound, held until the next record
	// tells a gap from a broken clock.
	high int64
	wild *particle.Particle
}

// pass replays the inputs once and returns how many particles it emitted.
func (r *runner) pass(ctx context.Context, pass int) (int, error) {
	opened, err := r.open()
	if err != nil {
		return 0, err
	}
	inputs, stop := readAll(opened)
	defer func() {
		stop()
		for _, in := range opened {
			in.Close()
		}
	}()
	if pass == 1 {
		r.shift = max(addSat(subSat(r.lastT, r.first), r.gap), int64(MinLoopShift))
	}
	// A loop ends where its event time would leave the int64 range (in
	// year 2262), rather than wrap around to 1677; a shift that saturated
	// would not move past the pass before.
	if pass > 0 && (r.shift == math.MaxInt64 || int64(pass) > math.MaxInt64/r.shift) {
		return 0, nil
	}
	shift := int64(pass) * r.shift
	r.stats.shift.Store(shift)
	m := newMerger(inputs, r.cfg.Concat, &r.stats)
	from, to := int64(math.MinInt64), int64(math.MaxInt64)
	if !r.cfg.From.IsZero() {
		from = r.cfg.From.UnixNano()
	}
	if !r.cfg.To.IsZero() {
		to = r.cfg.To.UnixNano()
	}
	n := 0
	done := ctx.Done()
	for {
		select {
		case <-done:
			return n, ctx.Err()
		default:
		}
		p, raw, err := m.next()
		if err != nil {
			if err == io.EOF {
				if r.wild != nil {
					r.rejectWild()
				}
				return n, r.flush()
			}
			if !isDecodeError(err) {
				return n, err
			}
			r.stats.invalid.Add(1)
			r.out.Reject(err, raw)
			continue
		}
		if p.Time < from || p.Time >= to {
			r.stats.outside.Add(1)
			continue
		}
		if pass == 0 {
			r.extent(p.Time, n)
		}
		t, ok := addChecked(p.Time, shift)
		if !ok {
			return 0, r.flush()
		}
		p.Time = t
		emitted, err := r.judge(ctx, p)
		if err != nil {
			return n, err
		}
		n += emitted
	}
}

// judge emits p unless its event time jumps ahead of the newest one
// emitted by more than the future bound. Such a record is held: if the
// next one jumps too, the recording has a gap and both are emitted;
// otherwise the held one has a wild timestamp and is rejected. The
// decision depends on the recording alone. judge returns how many
// particles it emitted.
func (r *runner) judge(ctx context.Context, p *particle.Particle) (int, error) {
	// The difference of two int64 may not fit one: compare it unsigned.
	jumps := r.cfg.FutureBound >= 0 && r.emitted && p.Time > r.high && uint64(p.Time)-uint64(r.high) > uint64(r.cfg.FutureBound)
	switch {
	case jumps && r.wild == nil:
		held := p.Clone()
		r.wild = &held
		return 0, nil
	case jumps:
		held := r.wild
		r.wild = nil
		if err := r.emit(ctx, held); err != nil {
			return 0, err
		}
		return 2, r.emit(ctx, p)
	case r.wild != nil:
		r.rejectWild()
	}
	return 1, r.emit(ctx, p)
}

// rejectWild rejects the held record as invalid.
func (r *runner) rejectWild() {
	p := r.wild
	r.wild = nil
	r.stats.invalid.Add(1)
	raw, _ := particle.AppendLineProtocol(nil, p, particle.Nanosecond)
	r.out.Reject(fmt.Errorf("%w: %s is %s ahead of the newest record replayed, %s (future bound %s)",
		ErrWildTimestamp, p.EventTime().Format(time.RFC3339Nano), time.Duration(p.Time-r.high),
		time.Unix(0, r.high).UTC().Format(time.RFC3339Nano), r.cfg.FutureBound), raw)
}

// isDecodeError reports whether err is a malformed record, after which
// reading goes on.
func isDecodeError(err error) bool {
	var de *particle.DecodeError
	return errors.As(err, &de)
}

// extent follows the first pass's first and last event time and its first
// gap.
func (r *runner) extent(t int64, n int) {
	if n == 0 {
		r.first, r.lastT = t, t
		return
	}
	if r.gap == 0 && t > r.lastT {
		r.gap = subSat(t, r.lastT)
	}
	r.lastT = max(r.lastT, t)
}

// open opens the inputs.
func (r *runner) open() ([]input, error) {
	inputs := make([]input, 0, len(r.cfg.Inputs))
	var total int64
	for _, in := range r.cfg.Inputs {
		o, err := openInput(in)
		if err != nil {
			for _, o := range inputs {
				o.Close()
			}
			return nil, err
		}
		total += o.size
		inputs = append(inputs, o)
	}
	r.stats.bytesTotal.Store(total)
	r.inputs.Store(&inputs)
	if !r.stats.spanKnown.Load() {
		r.scanSpan()
	}
	return inputs, nil
}

// scanSpan finds the event times of the first and last records of the
// inputs, within [From, To), from the ends of the files: the span that
// Status gives for progress. Inputs read from an io.Reader and gzip files
// have no span that can be known before reading them through.
func (r *runner) scanSpan() {
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for _, in := range r.cfg.Inputs {
		if in.Reader != nil {
			return
		}
		f, l, err := file.TimeRange(in.Path, *in.Format)
		if err != nil {
			return
		}
		first, last = min(first, f), max(last, l)
	}
	if !r.cfg.From.IsZero() {
		first = max(first, r.cfg.From.UnixNano())
	}
	if !r.cfg.To.IsZero() {
		last = min(last, r.cfg.To.UnixNano())
	}
	if first > last {
		return
	}
	r.stats.first.Store(first)
	r.stats.last.Store(last)
	r.stats.spanKnown.Store(true)
}

// emit emits p once it is due.
func (r *runner) emit(ctx context.Context, p *particle.Particle) error {
	if err := r.await(ctx, p.Time); err != nil {
		return err
	}
	if err := r.out.Emit(*p); err != nil {
		return err
	}
	r.unflushed = true
	if !r.emitted || p.Time > r.high {
		r.high = p.Time
	}
	r.last.Store(p.Time)
	if !r.emitted {
		r.emitted = true
		r.hasLast.Store(true)
	}
	r.stats.emitted.Add(1)
	return nil
}

// await returns when event time t is due, announcing changes meanwhile.
func (r *runner) await(ctx context.Context, t int64) error {
	for {
		if r.dirty.Load() {
			if err := r.sync(t); err != nil {
				return err
			}
		}
		switch {
		case r.pace.speed == Max:
			return nil
		case r.pace.paused:
			if err := r.flush(); err != nil {
				return err
			}
			select {
			case <-r.wake:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		case !r.pace.anchored:
			r.anchor(t)
			return nil
		}
		due := r.pace.due(t)
		if !due.After(r.now) {
			return nil
		}
		r.now = r.wall.Now()
		if !due.After(r.now) {
			return nil
		}
		if err := r.flush(); err != nil {
			return err
		}
		c, stop := r.wall.At(due)
		select {
		case <-c:
		case <-r.wake:
		case <-ctx.Done():
			stop()
			return ctx.Err()
		}
		stop()
		r.now = r.wall.Now()
	}
}

// sync takes Run's copy of the pacing state and emits the queued speed
// changes. They carry the event time of the last particle emitted (t, the
// next one's, before the first), so that no particle still to come is
// older than a change and late for it.
func (r *runner) sync(t int64) error {
	r.mu.Lock()
	r.dirty.Store(false)
	if r.Source.pacing.anchored && r.Source.pacing.speed == Max {
		// An unpaced replay has no schedule; a later speed anchors anew
		// at the position it reached.
		r.Source.pacing.anchored = false
	}
	r.pace = r.Source.pacing
	changes := r.changes
	r.changes = nil
	r.mu.Unlock()
	at := t
	if r.hasLast.Load() {
		at = r.last.Load()
	}
	for _, c := range changes {
		if err := r.out.EmitMeta(at, c); err != nil {
			return err
		}
		r.unflushed = true
	}
	return nil
}

// anchor makes event time t due now.
func (r *runner) anchor(t int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now = r.wall.Now()
	r.Source.pacing.anchored, r.Source.pacing.w0, r.Source.pacing.e0 = true, r.now, t
	r.pace = r.Source.pacing
}

func (r *runner) flush() error {
	if !r.unflushed {
		return nil
	}
	r.unflushed = false
	return r.out.Flush()
}

// Now implements streamclock.Clock, so that a Source can be its run's
// stream clock (topology.Config.Clock): the event time the replay's
// schedule has reached. It runs at the replay's speed, stands still while
// the replay is paused and, unpaced, is the event time of the last particle
// emitted; math.MinInt64 before the first. It is safe for concurrent use.
func (s *Source) Now() int64 {
	if !s.hasLast.Load() {
		return math.MinInt64
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pacing.position(s.wall.Now(), s.last.Load())
}

// Status is a snapshot of a replay's progress.
type Status struct {
	// Speed is the current speed.
	Speed Speed `json:"speed"`
	// Paused tells whether the replay is paused.
	Paused bool `json:"paused"`
	// Done tells whether Run has returned.
	Done bool `json:"done"`
	// Position is the event time of the last particle emitted, the zero
	// time before the first.
	Position time.Time `json:"position"`
	// First and Last are the event times of the first and last records of
	// the current pass, as scanned from the ends of the files (see
	// file.TimeRange): Position moves from one to the other. They are the
	// zero time when unknown: before the first pass, or for gzip files and
	// standard input.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Pass counts the passes of a looping replay from 0.
	Pass int `json:"pass"`
	// Read counts the records read: emitted, malformed, without values
	// or outside [From, To).
	Read uint64 `json:"read"`
	// Emitted counts the particles emitted.
	Emitted uint64 `json:"emitted"`
	// Invalid counts the malformed records, rejected.
	Invalid uint64 `json:"invalid"`
	// Skipped counts the records left out because all their values were
	// missing.
	Skipped uint64 `json:"skipped"`
	// Outside counts the records outside [From, To).
	Outside uint64 `json:"outside"`
	// BytesRead and BytesTotal measure the progress of the current pass
	// through the files (compressed bytes for gzip).
	BytesRead  int64 `json:"bytes_read"`
	BytesTotal int64 `json:"bytes_total"`
}

// Status returns the replay's progress.
func (s *Source) Status() Status {
	s.mu.Lock()
	speed, paused := s.speed, s.paused
	s.mu.Unlock()
	st := Status{
		Speed:      speed,
		Paused:     paused,
		Done:       s.stats.done.Load(),
		Pass:       int(s.stats.pass.Load()),
		Read:       s.stats.read.Load(),
		Emitted:    s.stats.emitted.Load(),
		Invalid:    s.stats.invalid.Load(),
		Skipped:    s.stats.skipped.Load(),
		Outside:    s.stats.outside.Load(),
		BytesTotal: s.stats.bytesTotal.Load(),
	}
	if s.hasLast.Load() {
		st.Position = time.Unix(0, s.last.Load()).UTC()
	}
	if s.stats.spanKnown.Load() {
		shift := s.stats.shift.Load()
		st.First = time.Unix(0, addSat(s.stats.first.Load(), shift)).UTC()
		st.Last = time.Unix(0, addSat(s.stats.last.Load(), shift)).UTC()
	}
	if ins := s.inputs.Load(); ins != nil {
		for _, in := range *ins {
			st.BytesRead += in.Offset()
		}
	}
	return st
}
