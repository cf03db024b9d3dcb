package operation

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/particle"
)

// KeyFunc returns the group of a particle; windows and per-key operations
// keep one state per group.
type KeyFunc func(p *particle.Particle) string

// Aggregator folds the particles of one window and group into an
// accumulator of type A, then turns it into results.
type Aggregator[A any] interface {
	// New returns the accumulator of a new window.
	New() A
	// Add folds p into acc and returns the new accumulator. An error fails
	// p's tree; p is then not part of the window.
	Add(acc A, p *particle.Particle) (A, error)
	// Result emits the results of a complete window. Emits on out are
	// anchored to every particle of the window. An error fails their
	// trees.
	Result(ctx context.Context, w Window, key string, acc A, out Emitter) error
}

// ResultTimer is implemented by Aggregators whose results carry another
// event time than their window's start, such as its end. A window holds the
// watermark forwarded downstream (see [OutputHolder]) at its results' time:
// at the window's start for Aggregators that do not implement it, which
// must then stamp results no earlier than that.
type ResultTimer interface {
	ResultTime(w Window) int64
}

// BatchFunc processes the particles of one complete window and group, in
// event-time order. Emits on out are anchored to all of them.
type BatchFunc func(ctx context.Context, w Window, key string, batch []particle.Particle, out Emitter) error

// Batch returns an operation that collects particles into the windows of b,
// one set per group (key may be nil for a single group), and calls fn for
// each complete window. See [Aggregate] for how windows close.
func Batch(b Batcher, key KeyFunc, fn BatchFunc) *Windowed[[]particle.Particle] {
	return Aggregate(b, key, batchAggregator(fn))
}

type batchAggregator BatchFunc

func (batchAggregator) New() []particle.Particle { return nil }

func (batchAggregator) Add(acc []particle.Particle, p *particle.Particle) ([]particle.Particle, error) {
	return append(acc, *p), nil
}

func (f batchAggregator) Result(ctx context.Context, w Window, key string, acc []particle.Particle, out Emitter) error {
	return f(ctx, w, key, acc, out)
}

// Aggregate returns an operation that folds particles into the windows of
// b, one accumulator per window and group (key may be nil for a single
// group), and emits agg's results when a window is complete.
//
// Every particle that joins a window is held (see [Emitter.Hold]) until the
// last window it belongs to has emitted its results, which are anchored to
// it: its source tree stays open until then. A particle whose windows were
// all closed already (a particle replayed after a failure downstream, or a
// late one passed through) is rejected with [ErrWindowClosed]: the engine
// dead-letters it, so that a lost result is never acknowledged silently. Time windows close in OnWatermark, in order of their end,
// then of their creation; count windows close when full; at the end of the
// stream every open window closes.
func Aggregate[A any](b Batcher, key KeyFunc, agg Aggregator[A]) *Windowed[A] {
	if !b.valid() {
		panic("operation: invalid Batcher")
	}
	return &Windowed[A]{
		b: b, key: key, agg: agg,
		panes: make(map[paneID]*pane[A]),
		open:  make(map[string]*pane[A]),
		refs:  make(map[Anchor]int),
		wm:    math.MinInt64,
	}
}

// Windowed is the operation of [Aggregate] and [Batch].
type Windowed[A any] struct {
	b   Batcher
	key KeyFunc
	agg Aggregator[A]
	// panes holds the fixed windows by start and group; open the current
	// session or count window of each group.
	panes  map[paneID]*pane[A]
	open   map[string]*pane[A]
	timers Timers[*pane[A]]
	// refs counts, per held input, the open windows it belongs to.
	refs map[Anchor]int
	wm   int64
}

type paneID struct {
	start int64
	key   string
}

type pane[A any] struct {
	w       Window
	key     string
	acc     A
	n       int
	anchors []Anchor
	// newest is the identity of the newest input whose anchor the pane
	// keeps when anchors are checkpointed: the one it keeps.
	newest inputID
}

// inputID is the identity of an input, which orders inputs as the engine
// does to pick the newest.
type inputID struct {
	time   int64
	origin uint32
	seq    uint64
}

func idOf(p *particle.Particle) inputID { return inputID{time: p.Time, origin: p.Origin, seq: p.Seq} }

func (a inputID) less(b inputID) bool {
	if a.time != b.time {
		return a.time < b.time
	}
	if a.origin != b.origin {
		return a.origin < b.origin
	}
	return a.seq < b.seq
}

var (
	_ Spanner          = (*Windowed[int])(nil)
	_ Operation        = (*Windowed[int])(nil)
	_ WatermarkHandler = (*Windowed[int])(nil)
	_ OutputHolder     = (*Windowed[int])(nil)
	_ Flusher          = (*Windowed[int])(nil)
)

// Open returns the number of windows not yet complete.
func (o *Windowed[A]) Open() int { return len(o.panes) + len(o.open) }

// Process implements Operation.
func (o *Windowed[A]) Process(ctx context.Context, in particle.Particle, out Emitter) error {
	var k string
	if o.key != nil {
		k = o.key(&in)
	}
	switch o.b.kind {
	case session:
		return o.addSession(ctx, k, &in, out)
	case count:
		return o.addCount(ctx, k, &in, out)
	}
	var (
		a    Anchor
		held bool
		open bool
		errs []error
	)
	o.b.starts(in.Time, func(start int64) {
		end := start + o.b.size
		if end-1 <= o.wm {
			return // closed already
		}
		open = true
		id := paneID{start: start, key: k}
		p := o.panes[id]
		if p == nil {
			p = &pane[A]{w: Window{Start: start, End: end}, key: k, acc: o.agg.New()}
			o.panes[id] = p
			o.timers.Set(metaparticle.EventTime, p, end-1)
		}
		if err := o.add(p, &in); err != nil {
			errs = append(errs, err)
			return
		}
		if !held {
			a, held = out.Hold(), true
		}
		o.attach(p, a, &in, out)
	})
	if held {
		o.settle(a, out)
	}
	switch {
	case !open:
		return ErrWindowClosed
	case len(errs) > 0 && held:
		// The input joined some windows: it stays held for them, and the
		// error is reported without failing it twice.
		return nil
	}
	return errors.Join(errs...)
}

func (o *Windowed[A]) add(p *pane[A], in *particle.Particle) error {
	acc, err := o.agg.Add(p.acc, in)
	if err != nil {
		return err
	}
	p.acc = acc
	p.n++
	return nil
}

// attach keeps a, the anchor of in, for p's result. A checkpointed anchor
// is kept only while in is the newest input of p, whose identity the
// result derives from: the engine acknowledges the inputs itself.
func (o *Windowed[A]) attach(p *pane[A], a Anchor, in *particle.Particle, out Emitter) {
	if !a.Checkpointed() {
		p.anchors = append(p.anchors, a)
		o.refs[a]++
		return
	}
	id := idOf(in)
	if len(p.anchors) > 0 {
		if !p.newest.less(id) {
			return
		}
		o.release(p.anchors[0], out)
		p.anchors = p.anchors[:0]
	}
	p.anchors, p.newest = append(p.anchors, a), id
	o.refs[a]++
}

// settle lets go of a checkpointed anchor no window kept: its identity is
// not needed.
func (o *Windowed[A]) settle(a Anchor, out Emitter) {
	if a.Checkpointed() && o.refs[a] == 0 {
		out.Ack(a)
	}
}

// release lets go of a checkpointed anchor a pane no longer keeps.
func (o *Windowed[A]) release(a Anchor, out Emitter) {
	if n := o.refs[a]; n > 1 {
		o.refs[a] = n - 1
		return
	}
	delete(o.refs, a)
	out.Ack(a)
}

func (o *Windowed[A]) addSession(_ context.Context, k string, in *particle.Particle, out Emitter) error {
	gap := o.b.size
	if in.Time+gap-1 <= o.wm {
		return ErrWindowClosed
	}
	p := o.open[k]
	if p == nil || in.Time >= p.w.End {
		p = &pane[A]{w: Window{Start: in.Time, End: in.Time + gap}, key: k, acc: o.agg.New()}
		o.open[k] = p
		o.timers.Set(metaparticle.EventTime, p, p.w.End-1)
	}
	if err := o.add(p, in); err != nil {
		return err
	}
	p.w.Start = min(p.w.Start, in.Time)
	if end := in.Time + gap; end > p.w.End {
		o.timers.Delete(metaparticle.EventTime, p, p.w.End-1)
		p.w.End = end
		o.timers.Set(metaparticle.EventTime, p, end-1)
	}
	a := out.Hold()
	o.attach(p, a, in, out)
	o.settle(a, out)
	return nil
}

func (o *Windowed[A]) addCount(ctx context.Context, k string, in *particle.Particle, out Emitter) error {
	p := o.open[k]
	if p == nil {
		p = &pane[A]{w: Window{Start: in.Time, End: in.Time + 1}, key: k, acc: o.agg.New()}
		o.open[k] = p
		// Partial count windows close at the end of the stream, in the
		// order they were opened.
		o.timers.Set(metaparticle.EventTime, p, math.MaxInt64)
	}
	if err := o.add(p, in); err != nil {
		return err
	}
	p.w.Start, p.w.End = min(p.w.Start, in.Time), max(p.w.End, in.Time+1)
	a := out.Hold()
	o.attach(p, a, in, out)
	o.settle(a, out)
	if p.n < o.b.n {
		return nil
	}
	o.timers.Delete(metaparticle.EventTime, p, math.MaxInt64)
	return o.fire(ctx, p, out)
}

// OnWatermark implements WatermarkHandler: it closes the windows that end
// at or before wm+1.
func (o *Windowed[A]) OnWatermark(ctx context.Context, wm int64, out Emitter) error {
	if wm > o.wm {
		o.wm = wm
	}
	var errs []error
	o.timers.Advance(metaparticle.EventTime, wm, func(p *pane[A], _ int64) {
		if err := o.fire(ctx, p, out); err != nil {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}

// Span implements Spanner: the window's size, or a session's gap. Count
// windows have no span in time.
func (o *Windowed[A]) Span() time.Duration { return time.Duration(o.b.size) }

// OutputHold implements OutputHolder: the earliest result time of the
// windows still open, and of the time windows that a later particle may
// still open (those containing wm+1). Session and count windows open at
// a particle, after wm.
func (o *Windowed[A]) OutputHold(wm int64) int64 {
	hold := int64(math.MaxInt64)
	switch o.b.kind {
	case session, count:
		for _, p := range o.open {
			hold = min(hold, o.resultTime(p.w))
		}
		return hold
	}
	if at, ok := o.timers.Next(metaparticle.EventTime); ok {
		hold = o.resultTime(Window{Start: at + 1 - o.b.size, End: at + 1})
	}
	if wm < math.MaxInt64 {
		o.b.starts(wm+1, func(start int64) {
			hold = min(hold, o.resultTime(Window{Start: start, End: start + o.b.size}))
		})
	}
	return hold
}

func (o *Windowed[A]) resultTime(w Window) int64 {
	if rt, ok := o.agg.(ResultTimer); ok {
		return rt.ResultTime(w)
	}
	return w.Start
}

// Flush implements Flusher: it closes every open window.
func (o *Windowed[A]) Flush(ctx context.Context, out Emitter) error {
	return o.OnWatermark(ctx, math.MaxInt64, out)
}

// fire emits the results of p, then settles its held inputs.
func (o *Windowed[A]) fire(ctx context.Context, p *pane[A], out Emitter) error {
	switch o.b.kind {
	case session, count:
		if o.open[p.key] == p {
			delete(o.open, p.key)
		}
	default:
		delete(o.panes, paneID{start: p.w.Start, key: p.key})
	}
	err := o.agg.Result(ctx, p.w, p.key, p.acc, &anchoredEmitter{out: out, anchors: p.anchors})
	for _, a := range p.anchors {
		n, ok := o.refs[a]
		switch {
		case !ok:
		case err != nil:
			delete(o.refs, a)
			out.Fail(a, err)
		case n <= 1:
			delete(o.refs, a)
			out.Ack(a)
		default:
			o.refs[a] = n - 1
		}
	}
	return err
}

// anchoredEmitter anchors every emit to the held inputs of a window.
type anchoredEmitter struct {
	out     Emitter
	anchors []Anchor
}

func (e *anchoredEmitter) Emit(p particle.Particle) { e.out.EmitAnchored(p, e.anchors...) }
func (e *anchoredEmitter) Hold() Anchor             { return e.out.Hold() }
func (e *anchoredEmitter) Ack(a Anchor)             { e.out.Ack(a) }
func (e *anchoredEmitter) Fail(a Anchor, err error) { e.out.Fail(a, err) }
func (e *anchoredEmitter) EmitAnchored(p particle.Particle, anchors ...Anchor) {
	e.out.EmitAnchored(p, append(anchors[:len(anchors):len(anchors)], e.anchors...)...)
}
