package syncbuffer

import "math"

const (
	// pageShift sets the slots' page size: 1024 items, large enough that a
	// page is rarely added, small enough that one more is cheap.
	pageShift = 10
	pageSize  = 1 << pageShift
	pageMask  = pageSize - 1
)

// page holds items by value.
type page[T any] [pageSize]T

// slot returns the item at slot i: page i>>pageShift, offset
// i&pageMask. Slot numbers keep tree entries free of pointers.
func (b *Buffer[T]) slot(i uint32) *T { return &b.slots[i>>pageShift][i&pageMask] }

// store puts item in a free slot and returns the slot and the item's
// size, as measured by b.size (0 without one; at most math.MaxUint32).
// When no slot is free it adds a page: items never move, so that growing
// costs no copy.
func (b *Buffer[T]) store(item T) (slot, size uint32) {
	if n := len(b.free); n > 0 {
		slot = b.free[n-1]
		b.free = b.free[:n-1]
	} else {
		slot = b.fresh
		b.fresh++
		if int(slot>>pageShift) == len(b.slots) {
			b.slots = append(b.slots, new(page[T]))
		}
	}
	p := b.slot(slot)
	*p = item
	if b.size != nil {
		// Measured in its slot, so that item does not escape.
		size = uint32(min(b.size(p), math.MaxUint32))
		b.bytes += int64(size)
	}
	return slot, size
}

// take empties e's slot and returns its item. Each time the buffer empties
// the slots start over; their pages are given back after two cycles (from
// empty to empty) that used less than half of them, so that a buffer that
// fills to the same size again and again keeps its pages, and one that saw
// a burst does not keep its memory for good.
func (b *Buffer[T]) take(e entry) T {
	b.bytes -= int64(e.size())
	p := b.slot(e.slot())
	item := *p
	var zero T
	*p = zero
	b.free = append(b.free, e.slot())
	if len(b.free) == int(b.fresh) {
		peak := int(b.fresh)
		b.fresh, b.free = 0, b.free[:0]
		if held := len(b.slots) * pageSize; held > keepSlots && 2*max(peak, b.lastPeak) < held {
			b.slots, b.free = nil, nil
		}
		b.lastPeak = peak
	}
	return item
}
