package topology

import (
	"context"
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
// given one, as a batch arrives.
type chanInbox struct {
	ch      chan<- *batch
	backlog *backlog
	wall    func() int64
}

func (c chanInbox) deliver(ctx context.Context, b *batch) error {
	select {
	case c.ch <- b:
	default:
		select {
		case c.ch <- b:
		case <-ctx.Done():
			return ctx.Err()
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
}

// output is one subscription of a downstream bolt to this instance's stream.
type output struct {
	stream   string
	grouping Grouping
	targets  []target
}

// router batches what one instance emits and hands full batches to the
// downstream instances. It belongs to the instance's goroutine.
type router struct {
	outputs []output
	pool    *batchPool
	scratch []int
	full    int // pending batches that are full
	// beforeDeliver, if set, runs before batches are handed on.
	beforeDeliver func()
}

// edgeFunc returns a fresh edge id for each copy of a tracked particle.
type edgeFunc func() uint64

// route appends env to the batches of the instances that receive it on
// stream and returns the XOR of the edge ids given to its copies. A meta
// particle goes to every instance of every output, whatever the stream.
func (r *router) route(stream string, env *envelope, newEdge edgeFunc) uint64 {
	var xor uint64
	meta := env.p.Meta != nil
	for oi := range r.outputs {
		o := &r.outputs[oi]
		if !meta && o.stream != stream {
			continue
		}
		if meta {
			for ti := range o.targets {
				r.add(&o.targets[ti], env)
			}
			continue
		}
		r.scratch = o.grouping.Route(&env.p, len(o.targets), r.scratch[:0])
		for _, ti := range r.scratch {
			t := &o.targets[ti]
			if !env.tracked {
				r.add(t, env)
				continue
			}
			copyEnv := *env
			copyEnv.first.edge = newEdge()
			xor ^= copyEnv.first.edge
			if len(env.more) > 0 {
				copyEnv.more = make([]anchor, len(env.more))
				for i, a := range env.more {
					copyEnv.more[i] = anchor{root: a.root, edge: copyEnv.first.edge}
				}
			}
			r.add(t, &copyEnv)
		}
	}
	return xor
}

func (r *router) add(t *target, env *envelope) {
	if t.pending == nil {
		t.pending = r.pool.get(t.input)
	}
	t.pending.items = append(t.pending.items, *env)
	if len(t.pending.items) == r.pool.size {
		r.full++
	}
}

// resolve calls fn with every pending item added since the last resolve.
func (r *router) resolve(fn func(env *envelope)) {
	for oi := range r.outputs {
		for ti := range r.outputs[oi].targets {
			t := &r.outputs[oi].targets[ti]
			if t.pending == nil {
				continue
			}
			for i := t.resolved; i < len(t.pending.items); i++ {
				fn(&t.pending.items[i])
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

// flush delivers every pending batch, or only the full ones. On error the
// undelivered batches stay pending.
func (r *router) flush(ctx context.Context, onlyFull bool) error {
	if r.beforeDeliver != nil {
		r.beforeDeliver()
	}
	for oi := range r.outputs {
		for ti := range r.outputs[oi].targets {
			t := &r.outputs[oi].targets[ti]
			if t.pending == nil || (onlyFull && len(t.pending.items) < r.pool.size) {
				continue
			}
			full := len(t.pending.items) >= r.pool.size
			if err := t.inbox.deliver(ctx, t.pending); err != nil {
				return err
			}
			if full {
				r.full--
			}
			t.pending, t.resolved = nil, 0
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
