package syncbuffer

import (
	"fmt"
	"math"

	"github.com/google/btree"
)

const (
	// degree is the btree degree, chosen by measurement: with
	// BenchmarkSyncBuffer, 16 and 64 were no faster at 10k and slower at
	// 100k or 1M buffered items.
	degree = 32
	// freeNodes is how many emptied tree nodes are kept for reuse, so that a
	// steady state of splits and merges does not allocate.
	freeNodes = 128
	// keepSlots is the capacity, in items, that a buffer keeps at least
	// as it shrinks: in its slots and in each input's run.
	keepSlots = 4096
)

// Stats are a buffer's counters since [New].
type Stats struct {
	Pushed    uint64 // items given to Push
	Released  uint64 // items handed to Release's callback
	Late      uint64 // items classified Late
	Invalid   uint64 // items classified Invalid
	Duplicate uint64 // items classified Duplicate
	Behind    uint64 // items classified Behind
	Buffered  int    // items held now

	// MaxReleased is the event time of the newest released item;
	// math.MinInt64 before the first release.
	MaxReleased int64

	// MetaRemembered is the number of meta identities held for
	// deduplication now.
	MetaRemembered int
}

// Buffer holds items from several inputs and releases them in [Key] order as
// the watermark passes them. Create one with [New].
//
// A Buffer is not safe for concurrent use: it belongs to one bolt instance
// and is used by the one goroutine that owns it. It holds at most 1<<32
// items.
type Buffer[T any] struct {
	cfg    Config
	key    func(*T) Key
	isMeta func(*T) bool

	// The tree orders small pointer-free entries; the items themselves live
	// in slots, so that tree nodes stay compact, are moved without write
	// barriers and are never scanned by the garbage collector.
	tree *btree.BTreeG[entry]
	// slots hold the items of the tree and the runs, by value.
	slots slotPages[T]
	// size measures items, when set; bytes is the total held.
	size  func(*T) int
	bytes int64
	// head, when full, is an entry that precedes every entry in tree, so
	// that a tree fed in order is rarely searched.
	head    entry
	hasHead bool
	// inRuns counts the entries in the inputs' runs (see run).
	inRuns int
	// buckets take the items out of order within the window (see
	// buckets); the tree takes the rest.
	buckets buckets[T]
	// scratch holds the item while the key functions look at it and
	// until it is stored, so that Push's argument does not escape to the
	// heap.
	scratch T
	arrival uint32

	inputs  []input
	started bool
	meta    metaSet
	stats   Stats
	// released is the key of the newest released item; hasReleased tells
	// whether there is one.
	released    Key
	hasReleased bool
}

type input struct {
	// high is the input's high-water mark: the newest event time it had
	// sent when it last sent an item or announced its progress. Valid once
	// sent.
	high int64
	// promise is the input's forwarded watermark: no item at or below it
	// will come from the input. math.MinInt64 until announced.
	promise int64
	last    int64 // stream-clock time of the last sign of life
	sent    bool
	ended   bool
	run     run // what it delivered in order, when runs are kept
}

// entry is the index's view of an item: its key, an arrival counter that
// keeps equal keys apart and in arrival order, the item's slot (for an
// item in a run or the tree; a bucket knows its items' places) and its
// size, kept so that a release need not measure the item again. Origin
// and arrival share a word, and so do slot and size, so that two entries
// fit in the registers of a call to lessEntry, the tree's inner loop.
type entry struct {
	time   int64
	seq    uint64
	origin uint64 // Key.Origin<<32 | arrival
	held   uint64 // slot<<32 | size
}

func (e entry) slot() uint32 { return uint32(e.held >> 32) }

func (e entry) size() uint32 { return uint32(e.held) }

func lessEntry(a, b entry) bool {
	if a.time != b.time {
		return a.time < b.time
	}
	if a.origin>>32 != b.origin>>32 {
		return a.origin < b.origin
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	// Serial-number order, so that the 32-bit counter may wrap.
	return int32(uint32(a.origin)-uint32(b.origin)) < 0
}

// New returns an empty buffer with inputs upstream inputs, numbered 0 to
// inputs-1. key returns an item's release key; isMeta reports whether an
// item is a meta item, deduplicated by its (Origin, Seq). A nil isMeta means
// no item is meta. The functions are called once per Push, and key again on
// the buffer's copy of an item it holds out of order; key must return the
// same key for a copy, and neither function may keep the pointer.
func New[T any](cfg Config, inputs int, key func(*T) Key, isMeta func(*T) bool) (*Buffer[T], error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if inputs < 1 {
		return nil, fmt.Errorf("%w: %d inputs", ErrNoInputs, inputs)
	}
	if key == nil {
		return nil, ErrNilKey
	}
	return newBuffer(cfg, inputs, key, isMeta), nil
}

// newBuffer returns an empty buffer; New has checked its arguments.
func newBuffer[T any](cfg Config, inputs int, key func(*T) Key, isMeta func(*T) bool) *Buffer[T] {
	b := &Buffer[T]{
		cfg:     cfg,
		key:     key,
		isMeta:  isMeta,
		tree:    btree.NewWithFreeListG(degree, lessEntry, btree.NewFreeListG[entry](freeNodes)),
		inputs:  make([]input, inputs),
		meta:    newMetaSet(),
		buckets: newBuckets(int64(cfg.Window), key),
	}
	for i := range b.inputs {
		b.inputs[i].promise = math.MinInt64
	}
	b.stats.MaxReleased = math.MinInt64
	return b
}

// Full reports whether the buffer holds its capacity of items or bytes, or
// more.
func (b *Buffer[T]) Full() bool {
	return b.Len() >= b.cfg.Capacity || (b.size != nil && b.bytes >= b.cfg.CapacityBytes)
}

// MeasureWith makes the buffer count the bytes of the items it holds with
// size, for [Config.CapacityBytes]. Call it before the first Push. size is
// called once per stored item, and an item counts for at most
// math.MaxUint32 bytes.
func (b *Buffer[T]) MeasureWith(size func(*T) int) { b.size = size }

// Bytes returns the bytes of the items held, as measured by the size
// function given to [Buffer.MeasureWith]; 0 without one.
func (b *Buffer[T]) Bytes() int64 { return b.bytes }

// Config returns the buffer's configuration with defaults applied.
func (b *Buffer[T]) Config() Config { return b.cfg }

// Len returns the number of items held.
func (b *Buffer[T]) Len() int {
	n := b.tree.Len() + b.inRuns + b.buckets.len()
	if b.hasHead {
		n++
	}
	return n
}

// Stats returns the buffer's counters.
func (b *Buffer[T]) Stats() Stats {
	s := b.stats
	s.Buffered = b.Len()
	s.MetaRemembered = len(b.meta.ids)
	return s
}

// Push adds item, which arrived from input at stream-clock time now, and
// reports how it was classified. Only a Buffered item is stored; the caller
// deals with the others according to its policy.
//
// A data item is Late when its event time is older than its input's
// high-water mark minus the window. The high-water mark includes the
// item's own [Key.High], the input's progress when it sent the item, so
// whether an item is late depends only on what its input sent, never on
// when it arrived. A data or meta item that is not Late but would be
// released behind what was already released is Behind; that happens only
// after an idle input stopped holding the watermark back, or when an input
// breaks its announced promise (see [Buffer.Advance]).
//
// Meta items are never Late for their input: a new identity is stored, or
// Behind if already passed, and the caller handles a Behind meta item at
// once. Later copies are Duplicate. A copy older than the deduplication
// horizon is Late, since its identity may have been forgotten.
//
// Every item except an Invalid one is a sign of life from input. Push
// panics if input is out of range.
func (b *Buffer[T]) Push(input int, item T, now int64) Status {
	if input < 0 || input >= len(b.inputs) {
		panic(fmt.Sprintf("syncbuffer: push from input %d of %d", input, len(b.inputs)))
	}
	b.start(now)
	b.stats.Pushed++

	b.scratch = item
	k := b.key(&b.scratch)
	meta := b.isMeta != nil && b.isMeta(&b.scratch)
	st := b.classify(input, k, meta, now)
	if st == Buffered {
		b.insert(&b.inputs[input], b.newEntry(k, b.measure(&b.scratch)), &b.scratch)
	}
	var zero T
	b.scratch = zero
	return st
}

// classify returns the status of an item with key k from input, counts it
// and updates what it tells about input.
func (b *Buffer[T]) classify(input int, k Key, meta bool, now int64) Status {
	if b.cfg.FutureBound >= 0 && k.Time > addSat(now, int64(b.cfg.FutureBound)) {
		b.stats.Invalid++
		return Invalid
	}
	in := &b.inputs[input]
	in.last = now
	if meta {
		switch {
		case b.meta.has(k):
			b.stats.Duplicate++
			return Duplicate
		case k.Time < b.meta.horizon:
			b.stats.Late++
			return Late
		}
		b.meta.add(k)
	} else {
		in.raise(max(k.High, k.Time))
		if k.Time < subSat(in.high, int64(b.cfg.Window)) {
			b.stats.Late++
			return Late
		}
	}
	if b.hasReleased && k.Time <= b.released.Time && k.Less(b.released) {
		b.stats.Behind++
		return Behind
	}
	return Buffered
}

// Advance records input's announced progress at stream-clock time now:
// high is the newest event time the input has sent, promise its forwarded
// watermark, a time at or below which it sends nothing more. Either may be
// math.MinInt64 for "not known"; neither ever goes back. An announcement is
// a sign of life. Items from an upstream instance that emits nothing for a
// while thus still let the watermark pass. Advance panics if input is out
// of range.
func (b *Buffer[T]) Advance(input int, high, promise, now int64) {
	if input < 0 || input >= len(b.inputs) {
		panic(fmt.Sprintf("syncbuffer: advance of input %d of %d", input, len(b.inputs)))
	}
	b.start(now)
	in := &b.inputs[input]
	in.last = now
	if high != math.MinInt64 {
		in.raise(high)
	}
	in.promise = max(in.promise, promise)
}

func (in *input) raise(t int64) {
	if !in.sent || t > in.high {
		in.high = t
	}
	in.sent = true
}

// bound returns the newest event time at or below which no item that is
// not Late can come from in any more, and whether it is known.
func (in *input) bound(window int64) (int64, bool) {
	if !in.sent {
		return in.promise, in.promise != math.MinInt64
	}
	return max(subSat(subSat(in.high, window), 1), in.promise), true
}

// newEntry returns the entry of a new item with key k and size, the next
// in arrival order.
func (b *Buffer[T]) newEntry(k Key, size uint32) entry {
	e := entry{time: k.Time, seq: k.Seq, origin: uint64(k.Origin)<<32 | uint64(b.arrival), held: uint64(size)}
	b.arrival++
	return e
}

// insert stores item with its entry e: in its input's run if it keeps
// the run in order, else as index does.
func (b *Buffer[T]) insert(in *input, e entry, item *T) {
	if len(b.inputs) <= maxRunInputs && in.run.accepts(e) {
		e.held |= uint64(b.store(item)) << 32
		in.run.push(e)
		b.inRuns++
		return
	}
	b.index(e, item)
}

// index stores item with its entry e in its bucket, else in a slot and the
// tree.
func (b *Buffer[T]) index(e entry, item *T) {
	if b.buckets.push(e, item) {
		return
	}
	e.held |= uint64(b.store(item)) << 32
	switch {
	case !b.hasHead && b.tree.Len() == 0:
		b.head, b.hasHead = e, true
	case b.hasHead && lessEntry(e, b.head):
		b.tree.ReplaceOrInsert(b.head)
		b.head = e
	default:
		b.tree.ReplaceOrInsert(e)
	}
}

// Released returns the key of the newest item released, and false before
// the first: a data item that arrives with a key before it is Late or
// Behind, never released in order.
func (b *Buffer[T]) Released() (Key, bool) { return b.released, b.hasReleased }

// Release removes the items at or below the watermark at stream-clock time
// now, in Key order, and calls fn with each. If fn returns false, Release
// stops; the item just passed counts as released and the rest stay. fn must
// not call b's methods.
func (b *Buffer[T]) Release(now int64, fn func(item T) bool) {
	b.start(now)
	wm, ok := b.Watermark(now)
	if !ok {
		return
	}
	b.meta.expire(subSat(wm, int64(b.cfg.MetaRetention)))
	var last entry
	released := false
	for {
		e, from, ok := b.next(wm)
		if !ok || e.time > wm {
			break
		}
		last, released = e, true
		b.stats.Released++
		b.bytes -= int64(e.size())
		var more bool
		if from == fromBuckets {
			// The bucket is cleared once drained.
			more = fn(*b.buckets.pop())
		} else {
			b.unlink(from)
			more = fn(b.take(e))
		}
		if !more {
			break
		}
	}
	if released {
		b.stats.MaxReleased = last.time
		b.released, b.hasReleased = Key{Time: last.time, Origin: uint32(last.origin >> 32), Seq: last.seq}, true
	}
}

// Where next found an entry: the tree's head, the buckets, or a run.
const (
	fromHead = iota - 2
	fromBuckets
)

// next returns the entry to release next and where it is: fromHead,
// fromBuckets or the number of the input whose run it heads. An entry
// above wm may stand for a smaller one not yet sorted (see buckets.front):
// next is exact only at or below wm.
func (b *Buffer[T]) next(wm int64) (entry, int, bool) {
	if !b.hasHead {
		b.head, b.hasHead = b.tree.DeleteMin()
	}
	var (
		min  entry
		from = fromHead
		ok   = b.hasHead
	)
	if ok {
		min = b.head
	}
	if b.buckets.len() > 0 {
		if e, has := b.buckets.front(wm); has && (!ok || lessEntry(e, min)) {
			min, from, ok = e, fromBuckets, true
		}
	}
	if b.inRuns > 0 {
		for i := range b.inputs {
			r := &b.inputs[i].run
			if r.len() > 0 && (!ok || lessEntry(r.front(), min)) {
				min, from, ok = r.front(), i, true
			}
		}
	}
	return min, from, ok
}

// unlink removes the entry next found at from, the tree's head or a run.
func (b *Buffer[T]) unlink(from int) {
	if from == fromHead {
		b.hasHead = false
		return
	}
	b.inputs[from].run.pop()
	b.inRuns--
}

// EndOfStream marks input as finished: it no longer holds the watermark
// back, and stays finished. Once every input has finished, Release flushes
// everything. It panics if input is out of range.
func (b *Buffer[T]) EndOfStream(input int) {
	if input < 0 || input >= len(b.inputs) {
		panic(fmt.Sprintf("syncbuffer: end of stream from input %d of %d", input, len(b.inputs)))
	}
	b.inputs[input].ended = true
}

// Watermark returns the watermark at stream-clock time now: items at or
// below it are releasable. It is the lowest bound over the active inputs:
// an input's high-water mark minus the window, minus one (an item exactly
// at the high-water mark minus the window is not late and may still come),
// or its promise if that is higher. It returns (0, false) while nothing is
// releasable for want of information: an active input has neither sent
// anything nor announced a promise. Once every input has ended it returns
// (math.MaxInt64, true).
//
// When every input that has not ended is idle, event time advances from
// the newest event by the stream-clock time that passed since the last sign
// of life, less the idle timeout (or to the highest bound if that is
// higher). So a quiet live feed's last items come out, and a feed of old
// data (a backfill) is not made late by a pause: the watermark follows the
// feed's own time, not the clock's.
//
// The watermark is not monotonic: an idle input that wakes up lowers it.
// Items already released stay released, and items behind them are Behind.
func (b *Buffer[T]) Watermark(now int64) (int64, bool) {
	var (
		lowest    int64 = math.MaxInt64
		highest   int64 = math.MinInt64
		newest    int64 = math.MinInt64 // the newest event any input sent
		life      int64 = math.MinInt64 // the last sign of life of any input
		active    bool
		allEnded  = true
		window    = int64(b.cfg.Window)
		idleAfter = b.cfg.IdleTimeout
	)
	for i := range b.inputs {
		in := &b.inputs[i]
		if in.ended {
			continue
		}
		allEnded = false
		bound, known := in.bound(window)
		if known {
			highest = max(highest, bound)
		}
		if in.sent {
			newest = max(newest, in.high)
		}
		life = max(life, in.last)
		if b.started && idleAfter >= 0 && now > in.last && uint64(now)-uint64(in.last) > uint64(idleAfter) {
			continue
		}
		if !known {
			return 0, false
		}
		active = true
		lowest = min(lowest, bound)
	}
	switch {
	case allEnded:
		return math.MaxInt64, true
	case active:
		return lowest, true
	case newest == math.MinInt64:
		return max(highest, subSat(now, int64(idleAfter))), true
	}
	return max(highest, subSat(addSat(newest, now-life), int64(idleAfter))), true
}

// start fixes the stream-clock time from which inputs that never sent count
// as silent.
func (b *Buffer[T]) start(now int64) {
	if b.started {
		return
	}
	b.started = true
	for i := range b.inputs {
		b.inputs[i].last = now
	}
}

func addSat(a, d int64) int64 {
	if d > 0 && a > math.MaxInt64-d {
		return math.MaxInt64
	}
	return a + d
}

func subSat(a, d int64) int64 {
	if d > 0 && a < math.MinInt64+d {
		return math.MinInt64
	}
	return a - d
}
