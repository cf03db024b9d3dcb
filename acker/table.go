package acker

import (
	"math"
	"math/bits"
	"time"
)

// RootID identifies one pending tree. It is unique by construction, not by
// chance: it holds the tree's slot index in the table (low 32 bits) and the
// slot's generation (high 32 bits), which changes every time a tree starts
// or ends in the slot. An id kept after its tree finished is therefore
// recognised as stale, never confused with a newer tree in the same slot,
// until that one slot has held 2^31 further trees. The table keeps 1024
// freed slots waiting before it reuses them, first in, first out, so that
// takes at least 2^31 × 1024 trees, unless Capacity leaves fewer than 1024
// slots free.
//
// The zero RootID is never the id of a pending tree.
type RootID uint64

// Slot returns the tree's slot index, in [0, Config.Capacity). While the
// tree is pending no other tree has the same slot, so the caller may keep
// per-tree data (the source message, say) in side tables indexed by Slot.
func (id RootID) Slot() int { return int(uint32(id)) }

func (id RootID) gen() uint32 { return uint32(id >> 32) }

func makeID(slot, gen uint32) RootID { return RootID(uint64(gen)<<32 | uint64(slot)) }

// reuseDelay is the number of free slots the table keeps, growing instead
// of reusing them while it may (within Capacity). Freed slots are reused first in,
// first out, so a slot comes back only after reuseDelay others were freed:
// its generation then wraps after at least 2^31 × reuseDelay trees.
const reuseDelay = 1024

// ticksPerTimeout is the least number of clock ticks per timeout: the
// resolution of the timeouts.
const ticksPerTimeout = 256

// slot is one entry of the table: 16 bytes, so one cache line holds four.
type slot struct {
	// xor is the tree's value while it is pending, the index of the next
	// free slot (or noSlot) while the slot is free.
	xor uint64
	// gen is odd while the slot holds a pending tree, even while it is free.
	gen uint32
	// born (stream clock) and progress (progress clock) are coarse ticks
	// that wrap; see tick.
	born     uint16
	progress uint16
}

const noSlot = ^uint32(0)

// Table holds the pending trees of a Storm-style XOR acker: for each root,
// the xor of the ids of the edges of its tree that are emitted but not yet
// acked. A tree is complete when its value returns to zero.
//
// Storage is a slice of 16-byte slots, doubled on demand up to
// Config.Capacity and never shrunk, with the free slots threaded into a
// queue through their value words: Init, Update and Fail take constant time
// and do not allocate (Init allocates only when it grows the slice,
// amortized constant). There is no map and no per-tree allocation.
//
// Times are nanoseconds on two clocks chosen by the caller: the stream clock
// (the now arguments) and the progress clock (progressNow in Expire), which
// starts equal to the stream clock and falls behind it by the time the
// engine declares the pipeline paused (backlogged but moving). Init and
// Update record progress on the progress clock, by subtracting from now the
// lag learnt at the last Expire; so a pause that began since then counts as
// progress for the trees touched meanwhile. Times are kept in ticks of
// 1/256 to 1/512 of each timeout, 16 bits wide, so they wrap; hence:
//
//   - A tree never times out or expires early.
//   - It fails at the first Expire after its timeout plus 3 ticks (1.2%),
//     plus, for Timeout, any pause begun since the Expire before.
//   - If Expire is called less often than every 60 timeouts, or a clock
//     jumps by that much between two calls, a tree may fail up to 129
//     timeouts late.
//
// A Table is not safe for concurrent use: one goroutine owns it.
type Table struct {
	slots    []slot
	capacity int

	// Free slots form a queue: head is the next to reuse, tail the last
	// freed; the xor word of each links to the next.
	head, tail uint32
	free       int

	// lag is the stream clock minus the progress clock at the last Expire,
	// and progressAt that progress clock.
	lag, progressAt int64

	bornShift, progressShift uint8
	// bornTicks, progressTicks are the timeouts in ticks, rounded up.
	bornTicks, progressTicks int32
}

// NewTable returns an empty table. Zero fields of cfg take their defaults;
// an invalid cfg gives an error wrapping [ErrInvalidConfig].
func NewTable(cfg Config) (*Table, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	t := &Table{capacity: cfg.Capacity, head: noSlot, tail: noSlot, progressAt: math.MinInt64}
	t.bornShift, t.bornTicks = resolution(cfg.HardTimeout)
	t.progressShift, t.progressTicks = resolution(cfg.ProgressTimeout)
	return t, nil
}

// resolution returns the tick of a timeout d as a power of two, 1<<shift ns,
// the largest at most d/ticksPerTimeout, and d in ticks rounded up.
func resolution(d time.Duration) (shift uint8, ticks int32) {
	if per := uint64(d) / ticksPerTimeout; per > 1 {
		shift = uint8(bits.Len64(per) - 1)
	}
	unit := int64(1) << shift
	return shift, int32((int64(d) + unit - 1) / unit)
}

// progressTick returns the progress clock at stream-clock time now in
// ticks. A now older than the last Expire's (a caller that read its clock
// before it got to the table) counts as that Expire's time: a tree is
// never stamped behind the progress clock Expire last saw, which would
// have it time out early.
func (t *Table) progressTick(now int64) uint16 {
	return tick(max(now-t.lag, t.progressAt), t.progressShift)
}

// tick converts a time to wrapping ticks of 1<<shift ns. The arithmetic
// shift rounds down, negative times included.
func tick(ns int64, shift uint8) uint16 { return uint16(ns >> shift) }

// elapsed returns now-then in ticks. A then after now (clock skew, or a
// pause not learnt yet) counts as no time.
func elapsed(now, then uint16) int32 { return int32(int16(now - then)) }

// Init starts a tree at time now (stream clock) whose value is xor, the xor
// of the edge ids of the root's first emissions. If xor is zero the root
// emitted nothing: Init returns done=true and the zero RootID and keeps
// nothing, even when the table is full. Otherwise it returns the tree's id,
// or [ErrFull] when Capacity trees are pending.
func (t *Table) Init(now int64, xor uint64) (id RootID, done bool, err error) {
	if xor == 0 {
		return 0, true, nil
	}
	s, ok := t.alloc()
	if !ok {
		return 0, false, ErrFull
	}
	sl := &t.slots[s]
	sl.gen++
	sl.xor = xor
	sl.born = tick(now, t.bornShift)
	sl.progress = t.progressTick(now)
	return makeID(s, sl.gen), false, nil
}

// Update xors xor into the tree's value and records progress at now
// (stream clock). In Storm's terms, xor is the id of the acked input edge
// xored with the ids of the new edges anchored to that input. When the
// value becomes zero the tree is complete and removed: Update returns
// done=true. ok is false, and nothing changes, when id is not a pending
// tree (finished, failed, or never issued): the caller counts a dropped ack.
func (t *Table) Update(now int64, id RootID, xor uint64) (done, ok bool) {
	sl := t.lookup(id)
	if sl == nil {
		return false, false
	}
	sl.xor ^= xor
	if sl.xor == 0 {
		t.release(uint32(id))
		return true, true
	}
	sl.progress = t.progressTick(now)
	return false, true
}

// Fail removes a pending tree, whatever its value. ok is false when id is
// not a pending tree.
func (t *Table) Fail(id RootID) (ok bool) {
	if t.lookup(id) == nil {
		return false
	}
	t.release(uint32(id))
	return true
}

// Expire removes the trees that are done waiting and calls fn for each,
// after removing it, with [Expired] for a tree whose age on the stream
// clock (now) exceeds HardTimeout, else [Timeout] for one that made no
// progress for longer than ProgressTimeout on the progress clock
// (progressNow). The engine calls it periodically, about once a second.
//
// progressNow must not be ahead of now, and now-progressNow (the time paused
// so far) must not decrease between calls; see [Table] for the precision.
//
// Expire sweeps every slot ever used, pending or not, in linear time. fn
// must not be nil; it may call the table's methods (Init a replay, say).
func (t *Table) Expire(now, progressNow int64, fn func(id RootID, r Reason)) {
	t.lag, t.progressAt = now-progressNow, progressNow
	born, bornTicks := tick(now, t.bornShift), t.bornTicks
	progress, progressTicks := tick(progressNow, t.progressShift), t.progressTicks
	for i := 0; ; i++ {
		// Scan with locals for the next tree to fail; fn may change t.
		slots := t.slots
		for i < len(slots) {
			sl := &slots[i]
			if sl.gen&1 != 0 && (elapsed(born, sl.born) > bornTicks || elapsed(progress, sl.progress) > progressTicks) {
				break
			}
			i++
		}
		if i >= len(slots) {
			return
		}
		sl := &slots[i]
		r := Timeout
		if elapsed(born, sl.born) > bornTicks {
			r = Expired
		}
		id := makeID(uint32(i), sl.gen)
		t.release(uint32(i))
		fn(id, r)
	}
}

// Len returns the number of pending trees.
func (t *Table) Len() int { return len(t.slots) - t.free }

// Cap returns the maximum number of pending trees, Config.Capacity.
func (t *Table) Cap() int { return t.capacity }

// lookup returns the slot of a pending tree, or nil.
func (t *Table) lookup(id RootID) *slot {
	s := uint32(id)
	if int64(s) >= int64(len(t.slots)) {
		return nil
	}
	sl := &t.slots[s]
	if g := id.gen(); sl.gen != g || g&1 == 0 {
		return nil
	}
	return sl
}

// alloc returns a free slot: a freed one if enough are waiting (or the
// table cannot grow), else a new one.
func (t *Table) alloc() (uint32, bool) {
	n := len(t.slots)
	if t.free > 0 && (t.free > reuseDelay || n == t.capacity) {
		s := t.head
		t.head = uint32(t.slots[s].xor)
		t.free--
		if t.free == 0 {
			t.tail = noSlot
		}
		return s, true
	}
	if n == t.capacity {
		return 0, false
	}
	if n == cap(t.slots) {
		grown := make([]slot, n, min(max(2*n, reuseDelay), t.capacity))
		copy(grown, t.slots)
		t.slots = grown
	}
	t.slots = t.slots[:n+1]
	return uint32(n), true
}

// release ends the tree in slot s and queues the slot for reuse.
func (t *Table) release(s uint32) {
	sl := &t.slots[s]
	sl.gen++
	sl.xor = uint64(noSlot)
	if t.free == 0 {
		t.head = s
	} else {
		t.slots[t.tail].xor = uint64(s)
	}
	t.tail = s
	t.free++
}
