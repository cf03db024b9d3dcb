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
// key's first particle arrives. A key whose latest particle is older than
// ttl behind the stream's progress is evicted: its operation gets Flush (if
// it is a [Flusher]) and Close (if it is an io.Closer), then is dropped, so
// memory stays bounded by the keys active within ttl. A ttl of zero or less
// never evicts.
//
// Progress is the watermark, and the time of metaparticle.Tick particles
// in the stream-time domain. A key's age is measured from the event time of
// its latest particle.
//
// The manager passes watermarks, meta particles and the end of the stream
// on to every live operation that wants them, in the order the keys were
// last used: the same input reaches them in the same order. That costs
// O(live keys) per watermark for operations that are WatermarkHandlers;
// [Aggregate] groups by key itself and fires only the windows due, which
// scales better for windows over many keys.
func PerKey(key KeyFunc, factory Factory, ttl time.Duration) Factory {
	return func() Operation { return NewKeyed(key, factory, ttl) }
}

// NewKeyed returns the per-key operation manager of one bolt instance; see
// [PerKey].
func NewKeyed(key KeyFunc, factory Factory, ttl time.Duration) *Keyed {
	return &Keyed{key: key, factory: factory, ttl: int64(ttl), live: make(map[string]*keyed)}
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
}

type keyed struct {
	key        string
	op         Operation
	last       int64
	prev, next *keyed
}

var (
	_ Operation        = (*Keyed)(nil)
	_ WatermarkHandler = (*Keyed)(nil)
	_ MetaHandler      = (*Keyed)(nil)
	_ Flusher          = (*Keyed)(nil)
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
		e = &keyed{key: name, op: k.factory(), last: in.Time}
		k.live[name] = e
	} else {
		k.unlink(e)
	}
	k.pushBack(e)
	e.last = max(e.last, in.Time)
	return e.op.Process(ctx, in, out)
}

// OnWatermark implements WatermarkHandler: it passes wm on, then evicts the
// keys idle for longer than the ttl.
func (k *Keyed) OnWatermark(ctx context.Context, wm int64, out Emitter) error {
	var errs []error
	for e := k.head; e != nil; e = e.next {
		if h, ok := e.op.(WatermarkHandler); ok {
			errs = append(errs, h.OnWatermark(ctx, wm, out))
		}
	}
	errs = append(errs, k.evict(ctx, wm, out))
	return errors.Join(errs...)
}

// HandleMeta implements MetaHandler: it passes m on, and a stream-time tick
// evicts the keys idle for longer than the ttl at the tick's time.
func (k *Keyed) HandleMeta(ctx context.Context, m particle.Particle, out Emitter) error {
	var errs []error
	for e := k.head; e != nil; e = e.next {
		if h, ok := e.op.(MetaHandler); ok {
			errs = append(errs, h.HandleMeta(ctx, m, out))
		}
	}
	if t, ok := m.Meta.(metaparticle.Tick); ok && t.Domain == metaparticle.StreamTime {
		errs = append(errs, k.evict(ctx, m.Time, out))
	}
	return errors.Join(errs...)
}

// Flush implements Flusher: it flushes every live operation.
func (k *Keyed) Flush(ctx context.Context, out Emitter) error {
	var errs []error
	for e := k.head; e != nil; e = e.next {
		if f, ok := e.op.(Flusher); ok {
			errs = append(errs, f.Flush(ctx, out))
		}
	}
	return errors.Join(errs...)
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
	return errors.Join(errs...)
}

// evict drops the keys whose latest particle is ttl or more before now.
// The list is in order of last use, which is event-time order for input
// released in order, so eviction stops at the first key still live.
func (k *Keyed) evict(ctx context.Context, now int64, out Emitter) error {
	if k.ttl <= 0 || now == math.MaxInt64 {
		return nil
	}
	var errs []error
	for e := k.head; e != nil && e.last <= now-k.ttl; e = k.head {
		k.unlink(e)
		delete(k.live, e.key)
		k.evicted++
		if f, ok := e.op.(Flusher); ok {
			errs = append(errs, f.Flush(ctx, out))
		}
		if c, ok := e.op.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
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
