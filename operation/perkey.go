package operation

import (
	"context"
	"errors"
	"io"
	"math"
	"time"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/particle"
)

// PerKey returns a Factory of per-key operation managers: each bolt
// instance keeps one operation, made by factory, per key, created when the
// key's first particle arrives. A key idle for ttl is evicted: its
// operation gets Flush (if it is a [Flusher]) and Close (if it is an
// io.Closer), then is dropped, so memory stays bounded by the keys active
// within ttl. A ttl of zero or less never evicts.
//
// A key is idle for ttl when the watermark is ttl past the event time of
// its latest particle, or when the stream clock has run ttl since that
// particle arrived. The stream clock is read on every housekeeping tick
// ([TickHandler]), so keys are evicted while the stream is quiet and the
// watermark stands still; it is measured from the tick before the
// particle, to within the housekeeping interval. It runs at the replay
// speed in a replay, and is compared with stream time only, so readings
// whose event time lags the wall clock (a sensor uploading a backlog) are
// not evicted as they arrive. The time of a metaparticle.Tick in the
// stream-time domain counts as the stream clock too. Make ttl longer than
// the windows of the operations and the synchronization buffer's window,
// or a key may be flushed while its next particle is on its way.
//
// The manager passes watermarks, ticks, meta particles and the end of the
// stream on to every live operation that wants them, in the order the keys
// were last used: the same input reaches them in the same order. That costs
// O(live keys) per watermark or tick for operations that are
// [WatermarkHandler]s or TickHandlers, and nothing for the others;
// [Aggregate] groups by key itself and fires only the windows due, which
// scales better for windows over many keys.
//
// At a checkpoint the manager snapshots its live keys and the state of
// each key's operation that is a [Snapshotter]; an operation that keeps
// state must be one, or its key restarts empty after a restore.
func PerKey(key KeyFunc, factory Factory, ttl time.Duration) Factory {
	return func() Operation { return NewKeyed(key, factory, ttl) }
}

// NewKeyed returns the per-key operation manager of one bolt instance; see
// [PerKey].
func NewKeyed(key KeyFunc, factory Factory, ttl time.Duration) *Keyed {
	return &Keyed{key: key, factory: factory, ttl: int64(ttl), live: make(map[string]*keyed), now: math.MinInt64}
}

// Keyed is the per-key operation manager made by [PerKey].
type Keyed struct {
	key     KeyFunc
	factory Factory
	ttl     int64
	live    map[string]*keyed
	// head and tail are the ends of the list of live keys, least recently
	// used first.
	head, tail *keyed
	evicted    uint64
	// now is the stream clock at the latest tick, math.MinInt64 before
	// the first.
	now int64
	// handlers counts the live operations implementing each hook.
	handlers [numHooks]int
}

type keyed struct {
	key  string
	op   Operation
	last int64 // event time of the latest particle
	// seen is the stream clock at the tick before the latest particle,
	// math.MinInt64 if it came before the first tick.
	seen       int64
	hooks      [numHooks]bool
	prev, next *keyed
}

// hook indexes the optional interfaces a live operation may implement.
type hook uint8

const (
	onWatermark hook = iota
	onTick
	onMeta
	onFlush
	onHold
	numHooks
)

var (
	_ Operation        = (*Keyed)(nil)
	_ WatermarkHandler = (*Keyed)(nil)
	_ TickHandler      = (*Keyed)(nil)
	_ MetaHandler      = (*Keyed)(nil)
	_ Flusher          = (*Keyed)(nil)
	_ OutputHolder     = (*Keyed)(nil)
	_ io.Closer        = (*Keyed)(nil)
)

// Len returns the number of live keys.
func (k *Keyed) Len() int { return len(k.live) }

// Evicted returns the number of keys evicted so far.
func (k *Keyed) Evicted() uint64 { return k.evicted }

// Process implements Operation: it passes in to its key's operation.
func (k *Keyed) Process(ctx context.Context, in particle.Particle, out Emitter) error {
	name := k.key(&in)
	e := k.live[name]
	if e == nil {
		e = k.add(name, in.Time)
	} else {
		k.unlink(e)
		k.pushBack(e)
	}
	e.last = max(e.last, in.Time)
	e.seen = k.now
	return e.op.Process(ctx, in, out)
}

// OnWatermark implements WatermarkHandler: it passes wm on, then evicts the
// keys whose latest particle is ttl or more before wm.
func (k *Keyed) OnWatermark(ctx context.Context, wm int64, out Emitter) error {
	errs := k.each(onWatermark, func(op Operation) error { return op.(WatermarkHandler).OnWatermark(ctx, wm, out) })
	return errors.Join(errs, k.evict(ctx, wm, out, func(e *keyed) int64 { return e.last }))
}

// OnTick implements TickHandler: it passes the stream clock's time on,
// then evicts the keys whose latest particle arrived ttl or more of stream
// time before now.
func (k *Keyed) OnTick(ctx context.Context, now int64, out Emitter) error {
	if k.now == math.MinInt64 {
		// Keys used before the first tick count from it.
		for e := k.head; e != nil && e.seen == math.MinInt64; e = e.next {
			e.seen = now
		}
	}
	k.now = max(k.now, now)
	errs := k.each(onTick, func(op Operation) error { return op.(TickHandler).OnTick(ctx, now, out) })
	return errors.Join(errs, k.evict(ctx, k.now, out, func(e *keyed) int64 { return e.seen }))
}

// HandleMeta implements MetaHandler: it passes m on, and a stream-time tick
// evicts the keys whose latest particle is ttl or more before the tick's
// time.
func (k *Keyed) HandleMeta(ctx context.Context, m particle.Particle, out Emitter) error {
	errs := k.each(onMeta, func(op Operation) error { return op.(MetaHandler).HandleMeta(ctx, m, out) })
	if t, ok := m.Meta.(metaparticle.Tick); ok && t.Domain == metaparticle.StreamTime {
		errs = errors.Join(errs, k.evict(ctx, m.Time, out, func(e *keyed) int64 { return e.last }))
	}
	return errs
}

// OutputHold implements OutputHolder: the earliest hold of the live
// operations that hold output. It costs O(live keys) when they do, and
// nothing otherwise.
func (k *Keyed) OutputHold(wm int64) int64 {
	hold := int64(math.MaxInt64)
	k.each(onHold, func(op Operation) error {
		hold = min(hold, op.(OutputHolder).OutputHold(wm))
		return nil
	})
	return hold
}

// Flush implements Flusher: it flushes every live operation.
func (k *Keyed) Flush(ctx context.Context, out Emitter) error {
	return k.each(onFlush, func(op Operation) error { return op.(Flusher).Flush(ctx, out) })
}

// Close closes the live operations that are io.Closers and forgets every
// key.
func (k *Keyed) Close() error {
	var errs []error
	for e := k.head; e != nil; e = e.next {
		if c, ok := e.op.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	clear(k.live)
	k.head, k.tail = nil, nil
	k.handlers = [numHooks]int{}
	return errors.Join(errs...)
}

// add makes the operation of a new key, whose latest particle is at
// last, and makes it the most recently used.
func (k *Keyed) add(name string, last int64) *keyed {
	e := &keyed{key: name, op: k.factory(), last: last}
	_, e.hooks[onWatermark] = e.op.(WatermarkHandler)
	_, e.hooks[onTick] = e.op.(TickHandler)
	_, e.hooks[onMeta] = e.op.(MetaHandler)
	_, e.hooks[onFlush] = e.op.(Flusher)
	_, e.hooks[onHold] = e.op.(OutputHolder)
	k.count(e, 1)
	k.live[name] = e
	k.pushBack(e)
	return e
}

// each calls fn with the live operations implementing h, least recently
// used first; without any it costs nothing.
func (k *Keyed) each(h hook, fn func(op Operation) error) error {
	if k.handlers[h] == 0 {
		return nil
	}
	var errs []error
	for e := k.head; e != nil; e = e.next {
		if e.hooks[h] {
			errs = append(errs, fn(e.op))
		}
	}
	return errors.Join(errs...)
}

// evict drops the keys whose age, at(e), is ttl or more before now. The
// list is in order of last use, which is the order of both ages for input
// released in event-time order, so eviction stops at the first key still
// live.
func (k *Keyed) evict(ctx context.Context, now int64, out Emitter, at func(e *keyed) int64) error {
	if k.ttl <= 0 || now == math.MaxInt64 || now == math.MinInt64 {
		return nil
	}
	var errs []error
	for e := k.head; e != nil && at(e) <= now-k.ttl; e = k.head {
		k.unlink(e)
		delete(k.live, e.key)
		k.count(e, -1)
		k.evicted++
		if e.hooks[onFlush] {
			errs = append(errs, e.op.(Flusher).Flush(ctx, out))
		}
		if c, ok := e.op.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// count adds d to the handler counts of e's hooks.
func (k *Keyed) count(e *keyed, d int) {
	for h, ok := range e.hooks {
		if ok {
			k.handlers[h] += d
		}
	}
}

func (k *Keyed) pushBack(e *keyed) {
	e.prev, e.next = k.tail, nil
	if k.tail != nil {
		k.tail.next = e
	} else {
		k.head = e
	}
	k.tail = e
}

func (k *Keyed) unlink(e *keyed) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		k.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		k.tail = e.prev
	}
	e.prev, e.next = nil, nil
}
