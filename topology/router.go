package topology

import (
	"context"
	"math"
	"sync/atomic"

	"github.com/sensorstorm/sensorstorm/acker"
)

// inbox is the receiving end of one bolt instance. It is the one place a
// batch crosses from one instance to another, so that an edge can later
// cross a process boundary without touching the rest of the engine.
type inbox interface {
	// deliver hands b over, blocking while the receiver is full. On error
	// b was not delivered and still belongs to the caller.
	deliver(ctx context.Context, b *batch) error
}

// chanInbox is an in-process inbox. It marks the receiver's backlog, when
// given one, as a batch arrives, and counts in queued, when given it, the
// sender's batches waiting for the receiver: an input with batches waiting
// is not idle, however long the receiver took to get to them.
type chanInbox struct {
	ch      chan<- *batch
	backlog *backlog
	wall    func() int64
	queued  *atomic.Int64
	// stop, when set, ends a wait for a receiver that takes no more
	// batches (errStopped).
	stop <-chan struct{}
}

func (c chanInbox) deliver(ctx context.Context, b *batch) error {
	queued := c.queued
	if b.quiet {
		queued = nil
	}
	if queued != nil {
		queued.Add(1)
	}
	select {
	case c.ch <- b:
	default:
		select {
		case c.ch <- b:
		case <-ctx.Done():
			if queued != nil {
				queued.Add(-1)
			}
			return ctx.Err()
		case <-c.stop:
			if queued != nil {
				queued.Add(-1)
			}
			return errStopped
		}
	}
	if c.backlog != nil {
		c.backlog.mark(c.wall())
	}
	return nil
}

// target is one downstream instance as seen from one upstream instance.
type target struct {
	inbox   inbox
	input   int // the upstream instance's input number at the target
	pending *batch
	// resolved counts the pending items resolve has passed.
	resolved int
	// told is the progress last handed to the target.
	told progress
}

// progress is what an instance tells a downstream instance of how far it
// has come: its high-water mark on the stream and its promise.
type progress struct{ high, promise int64 }

var noProgress = progress{high: math.MinInt64, promise: math.MinInt64}

// output is one subscription of a downstream bolt to this instance's stream.
type output struct {
	stream   string
	grouping Grouping
	targets  []target
	// high is the newest event time of the data routed to this output,
	// the high-water mark its targets judge lateness by.
	high int64
}

// router batches what one instance emits and hands full batches to the
// downstream instances. It belongs to the instance's goroutine.
type router struct {
	outputs []output
	pool    *batchPool
	scratch []int
	full    int // pending batches that are full
	// promise is the instance's forwarded watermark: it emits nothing at
	// or below it any more.
	promise int64
	// beforeDeliver, if set, runs before batches are handed on.
	beforeDeliver func()
	// barriers tells that the run takes checkpoints: a batch of barriers
	// alone is marked quiet (see batch).
	barriers bool
}

// newRouter returns a router with no outputs yet.
func newRouter(pool *batchPool) router {
	return router{pool: pool, promise: math.MinInt64}
}

// addOutput subscribes targets to stream with grouping g.
func (r *router) addOutput(stream string, g Grouping, targets []target) {
	for i := range targets {
		targets[i].told = noProgress
	}
	r.outputs = append(r.outputs, output{stream: stream, grouping: g, targets: targets, high: math.MinInt64})
}

// reset drops what is pending and forgets what the targets were told, as
// newly built.
func (r *router) reset() {
	for oi := range r.outputs {
		o := &r.outputs[oi]
		o.high = math.MinInt64
		for ti := range o.targets {
			t := &o.targets[ti]
			if t.pending != nil {
				r.pool.put(t.pending)
			}
			t.pending, t.resolved, t.told = nil, 0, noProgress
		}
	}
	r.full, r.promise = 0, math.MinInt64
}

// high returns the newest event time routed to any output.
func (r *router) high() int64 {
	h := int64(math.MinInt64)
	for i := range r.outputs {
		h = max(h, r.outputs[i].high)
	}
	return h
}

// expect raises the high-water mark of the outputs of stream to t, the
// event time of a particle about to be routed there, as routing it will:
// receivers judge lateness and release by it before the particle comes.
func (r *router) expect(stream string, t int64) {
	for oi := range r.outputs {
		if o := &r.outputs[oi]; o.stream == stream {
			o.high = max(o.high, t)
		}
	}
}

// route appends env to the batches of the instances that receive it on
// stream and returns the XOR of the edge ids given to its copies, drawn
// from edges (nil for untracked routing). A meta particle goes to every
// instance of every output, whatever the stream.
func (r *router) route(stream string, env *envelope, edges *acker.EdgeIDs) uint64 {
	var xor uint64
	meta := env.p.Meta != nil
	for oi := range r.outputs {
		o := &r.outputs[oi]
		if !meta && o.stream != stream {
			continue
		}
		if meta {
			for ti := range o.targets {
				xor ^= r.addCopy(&o.targets[ti], env, edges)
			}
			continue
		}
		o.high = max(o.high, env.p.Time)
		env.high = o.high
		r.scratch = o.grouping.Route(&env.p, len(o.targets), r.scratch[:0])
		for _, ti := range r.scratch {
			xor ^= r.addCopy(&o.targets[ti], env, edges)
		}
	}
	return xor
}

// addCopy appends a copy of env to t's batch and returns the copy's edge:
// a tracked copy gets a fresh edge in each of env's trees, so that every
// copy must be acked once; an untracked one goes as it is, under edge 0.
// The edge is set on the copy in the batch: an envelope is large, and a
// copy of it on the way costs as much as the rest of the acking.
func (r *router) addCopy(t *target, env *envelope, edges *acker.EdgeIDs) uint64 {
	c := r.add(t, env)
	if !env.tracked || edges == nil {
		return 0
	}
	c.first.edge = edges.Next()
	if more := env.moreAnchors(); len(more) > 0 {
		anchors := make([]anchor, len(more))
		for i, a := range more {
			anchors[i] = anchor{root: a.root, edge: c.first.edge}
		}
		c.more = &anchors
	}
	return c.first.edge
}

// add appends env to t's batch and returns the copy there, valid until the
// next add.
func (r *router) add(t *target, env *envelope) *envelope {
	if t.pending == nil {
		t.pending = r.pool.get(t.input)
	}
	t.pending.items = append(t.pending.items, *env)
	if len(t.pending.items) == r.pool.size {
		r.full++
	}
	return &t.pending.items[len(t.pending.items)-1]
}

// resolve gives the tracked pending items added since the last resolve
// their trees' roots: an item's provisional root k (see provisional)
// becomes roots[k]. It runs over every particle a source emits: no
// callback per item.
func (r *router) resolve(roots []acker.RootID) {
	for oi := range r.outputs {
		for ti := range r.outputs[oi].targets {
			t := &r.outputs[oi].targets[ti]
			if t.pending == nil {
				continue
			}
			for i := t.resolved; i < len(t.pending.items); i++ {
				if env := &t.pending.items[i]; env.tracked {
					env.first.root = roots[env.first.root.Slot()]
				}
			}
			t.resolved = len(t.pending.items)
		}
	}
}

// flushFull delivers the batches that are full.
func (r *router) flushFull(ctx context.Context) error {
	if r.full == 0 {
		return nil
	}
	return r.flush(ctx, true)
}

// handOn is the flush of an instance's routine work, which has no error
// to return: a batch it cannot deliver (the run is stopping, or a remote
// edge refused it) stays pending, a later flush delivers it with what
// came since, and the end of the stream, which returns its error, is the
// last try.
func (r *router) handOn(ctx context.Context, onlyFull bool) {
	if onlyFull {
		_ = r.flushFull(ctx)
		return
	}
	_ = r.flush(ctx, false)
}

// flush delivers every pending batch, or only the full ones. Every batch
// carries the instance's progress; a flush of all also announces progress
// to the targets that have not heard of it, in a batch without items. On
// error the undelivered batches stay pending.
func (r *router) flush(ctx context.Context, onlyFull bool) error {
	if r.beforeDeliver != nil {
		r.beforeDeliver()
	}
	for oi := range r.outputs {
		o := &r.outputs[oi]
		now := progress{high: o.high, promise: r.promise}
		for ti := range o.targets {
			t := &o.targets[ti]
			switch {
			case t.pending != nil && (!onlyFull || len(t.pending.items) >= r.pool.size):
			case t.pending == nil && !onlyFull && now != t.told:
				t.pending = r.pool.get(t.input)
			default:
				continue
			}
			full := len(t.pending.items) >= r.pool.size
			t.pending.high, t.pending.promise = now.high, now.promise
			t.pending.quiet = r.barriers && now == t.told && onlyBarriers(t.pending)
			if err := t.inbox.deliver(ctx, t.pending); err != nil {
				return err
			}
			if full {
				r.full--
			}
			t.pending, t.resolved, t.told = nil, 0, now
		}
	}
	return nil
}

// drain flushes everything and tells every downstream instance that no new
// data follows from this instance, only replays.
func (r *router) drain(ctx context.Context) error {
	return r.flushMarked(ctx, func(b *batch) { b.drained = true })
}

// endOfStream flushes everything and tells every downstream instance that
// this instance has ended.
func (r *router) endOfStream(ctx context.Context) error {
	return r.flushMarked(ctx, func(b *batch) { b.eos = true })
}

// flushMarked marks a batch for every target, empty if need be, and
// flushes them all.
func (r *router) flushMarked(ctx context.Context, mark func(*batch)) error {
	for oi := range r.outputs {
		for ti := range r.outputs[oi].targets {
			t := &r.outputs[oi].targets[ti]
			if t.pending == nil {
				t.pending = r.pool.get(t.input)
			}
			mark(t.pending)
		}
	}
	return r.flush(ctx, false)
}
