package operation

import (
	"cmp"
	"container/heap"
	"slices"

	"github.com/sensorstorm/sensorstorm/metaparticle"
)

// Timers holds timers in event time and in stream time, any number per key.
// The zero Timers is ready to use. It is not safe for concurrent use: like
// an operation, it belongs to one bolt instance.
//
// Event-time timers are advanced from [WatermarkHandler.OnWatermark] with
// the watermark. Stream-time timers are advanced from [TickHandler.OnTick]
// with the stream clock's time, which the engine passes every housekeeping
// interval: they fire while no particle arrives, at the replay speed in a
// replay, and late by at most one interval. (A metaparticle.Tick in the
// stream-time domain, seen in [MetaHandler.HandleMeta], can advance them
// too.) Timers fire in order of their time, then in the order they were
// set, so the same input fires them in the same order however time
// advances: in one round or in many. An operation that keeps Timers
// snapshots them with [Timers.Snapshot] (see [Snapshotter]).
type Timers[K comparable] struct {
	queues [2]timerQueue[K]
}

type timerID[K comparable] struct {
	key K
	at  int64
}

type timerEntry[K comparable] struct {
	id  timerID[K]
	seq uint64
}

type timerQueue[K comparable] struct {
	heap []timerEntry[K]
	// live maps the timers set to the sequence of their entry in heap;
	// entries of deleted or reset timers stay in heap until they surface.
	live map[timerID[K]]uint64
	seq  uint64
}

func (q *timerQueue[K]) Len() int { return len(q.heap) }
func (q *timerQueue[K]) Less(i, j int) bool {
	a, b := &q.heap[i], &q.heap[j]
	if a.id.at != b.id.at {
		return a.id.at < b.id.at
	}
	return a.seq < b.seq
}
func (q *timerQueue[K]) Swap(i, j int) { q.heap[i], q.heap[j] = q.heap[j], q.heap[i] }
func (q *timerQueue[K]) Push(x any)    { q.heap = append(q.heap, x.(timerEntry[K])) }
func (q *timerQueue[K]) Pop() any {
	e := q.heap[len(q.heap)-1]
	q.heap = q.heap[:len(q.heap)-1]
	return e
}

func (t *Timers[K]) queue(d metaparticle.Domain) *timerQueue[K] {
	q := &t.queues[0]
	if d == metaparticle.StreamTime {
		q = &t.queues[1]
	}
	if q.live == nil {
		q.live = make(map[timerID[K]]uint64)
	}
	return q
}

// Set sets a timer for key at time at (ns) in domain d. A timer already set
// for the same key and time in d is kept, not doubled.
func (t *Timers[K]) Set(d metaparticle.Domain, key K, at int64) {
	q := t.queue(d)
	id := timerID[K]{key: key, at: at}
	if _, ok := q.live[id]; ok {
		return
	}
	q.seq++
	q.live[id] = q.seq
	heap.Push(q, timerEntry[K]{id: id, seq: q.seq})
	q.compact()
}

// Delete removes the timer for key at time at in domain d and reports
// whether there was one.
func (t *Timers[K]) Delete(d metaparticle.Domain, key K, at int64) bool {
	q := t.queue(d)
	id := timerID[K]{key: key, at: at}
	if _, ok := q.live[id]; !ok {
		return false
	}
	delete(q.live, id)
	return true
}

// Len returns the number of timers set in domain d.
func (t *Timers[K]) Len(d metaparticle.Domain) int { return len(t.queue(d).live) }

// Next returns the time of the earliest timer in domain d, or (0, false)
// when none is set.
func (t *Timers[K]) Next(d metaparticle.Domain) (int64, bool) {
	q := t.queue(d)
	q.skipDead()
	if len(q.heap) == 0 {
		return 0, false
	}
	return q.heap[0].id.at, true
}

// Advance fires, in order, the timers of domain d due at or before now,
// removing each before calling fire. fire may set new timers; those due at
// or before now fire in the same call.
func (t *Timers[K]) Advance(d metaparticle.Domain, now int64, fire func(key K, at int64)) {
	q := t.queue(d)
	for {
		q.skipDead()
		if len(q.heap) == 0 || q.heap[0].id.at > now {
			return
		}
		e := heap.Pop(q).(timerEntry[K])
		delete(q.live, e.id)
		fire(e.id.key, e.id.at)
	}
}

// skipDead pops the entries of deleted timers off the top of the heap.
func (q *timerQueue[K]) skipDead() {
	for len(q.heap) > 0 {
		top := q.heap[0]
		if seq, ok := q.live[top.id]; ok && seq == top.seq {
			return
		}
		heap.Pop(q)
	}
}

// compact rebuilds the heap when deleted entries outnumber live ones, so
// that a key reset many times (a growing session) does not grow the heap.
func (q *timerQueue[K]) compact() {
	if len(q.heap) < 64 || len(q.heap) < 2*len(q.live) {
		return
	}
	live := q.heap[:0]
	for _, e := range q.heap {
		if seq, ok := q.live[e.id]; ok && seq == e.seq {
			live = append(live, e)
		}
	}
	clear(q.heap[len(live):])
	q.heap = live
	heap.Init(q)
}

// reserve makes room for n timers in domain d, which has none yet, so
// that setting many at once (a restore) does not grow the map step by
// step.
func (t *Timers[K]) reserve(d metaparticle.Domain, n int) {
	if q := t.queue(d); len(q.live) == 0 {
		q.live = make(map[timerID[K]]uint64, n)
		q.heap = slices.Grow(q.heap[:0], n)
	}
}

// ordered returns the timers set in domain d in the order they fire.
func (t *Timers[K]) ordered(d metaparticle.Domain) []timerID[K] {
	q := t.queue(d)
	live := make([]timerEntry[K], 0, len(q.live))
	for _, e := range q.heap {
		if seq, ok := q.live[e.id]; ok && seq == e.seq {
			live = append(live, e)
		}
	}
	slices.SortFunc(live, func(a, b timerEntry[K]) int {
		return cmp.Or(cmp.Compare(a.id.at, b.id.at), cmp.Compare(a.seq, b.seq))
	})
	ids := make([]timerID[K], len(live))
	for i, e := range live {
		ids[i] = e.id
	}
	return ids
}
