package syncbuffer

import (
	"math"
	"math/bits"
)

const (
	// pageShift sets the slots' page size: 1024 items, large enough that a
	// page is rarely added, small enough that one more is cheap.
	pageShift = 10
	pageSize  = 1 << pageShift
	pageMask  = pageSize - 1
	pageWords = pageSize / 64
)

// page holds items by value.
type page[T any] [pageSize]T

// slotPages is where a buffer keeps its items: pages of slots that are
// added as the buffer grows, so that growing never moves an item, and
// given back from the end as it shrinks. A new item takes the lowest free
// slot, so that the items of a burst, once released, leave the last pages
// empty even while the buffer keeps others: its memory follows what it
// holds, not the most it ever held.
type slotPages[T any] struct {
	pages []*page[T]
	// free has a bit set per free slot of pages; withFree a bit per page
	// with a free slot; used counts the items per page; low is a page
	// below which every page is full.
	free     []uint64
	withFree []uint64
	used     []uint16
	low      int
	// inUse is the number of pages up to the last one holding an item.
	inUse int
}

// keepPages is the number of empty pages kept at least: a buffer that
// fills and empties does not add and drop pages each time.
const keepPages = keepSlots / pageSize

// at returns the item at slot i: page i>>pageShift, offset i&pageMask.
// Slot numbers keep tree entries free of pointers.
func (s *slotPages[T]) at(i uint32) *T { return &s.pages[i>>pageShift][i&pageMask] }

// alloc takes the lowest free slot, adding a page when none is free.
func (s *slotPages[T]) alloc() uint32 {
	for w := s.low / 64; w < len(s.withFree); w++ {
		if s.withFree[w] == 0 {
			continue
		}
		p := w*64 + bits.TrailingZeros64(s.withFree[w])
		s.low = p
		for j, word := range s.free[p*pageWords : (p+1)*pageWords] {
			if word != 0 {
				return s.take(p, j*64+bits.TrailingZeros64(word))
			}
		}
	}
	p := len(s.pages)
	s.pages = append(s.pages, new(page[T]))
	s.used = append(s.used, 0)
	for range pageWords {
		s.free = append(s.free, math.MaxUint64)
	}
	if p/64 == len(s.withFree) {
		s.withFree = append(s.withFree, 0)
	}
	s.withFree[p/64] |= 1 << (p % 64)
	s.low = p
	return s.take(p, 0)
}

// take marks offset o of page p used and returns its slot.
func (s *slotPages[T]) take(p, o int) uint32 {
	i := p*pageSize + o
	s.free[i/64] &^= 1 << (i % 64)
	if s.used[p]++; s.used[p] == pageSize {
		s.withFree[p/64] &^= 1 << (p % 64)
	}
	s.inUse = max(s.inUse, p+1)
	return uint32(i)
}

// release frees slot i, whose item the caller has cleared, and gives back
// the empty pages at the end beyond as many as are in use (and at least
// keepPages), so that a buffer growing again soon finds them.
func (s *slotPages[T]) release(i uint32) {
	p := int(i >> pageShift)
	s.free[i/64] |= 1 << (i % 64)
	s.withFree[p/64] |= 1 << (p % 64)
	s.used[p]--
	s.low = min(s.low, p)
	if s.used[p] != 0 || p+1 != s.inUse {
		return
	}
	for s.inUse > 0 && s.used[s.inUse-1] == 0 {
		s.inUse--
	}
	if keep := max(2*s.inUse, keepPages); len(s.pages) > 2*keep {
		s.shrink(keep)
	}
}

// shrink drops the pages from n on, all of them empty.
func (s *slotPages[T]) shrink(n int) {
	clear(s.pages[n:])
	s.pages = s.pages[:n]
	s.used = s.used[:n]
	s.free = s.free[:n*pageWords]
	w := (n + 63) / 64
	s.withFree = s.withFree[:w]
	if n%64 != 0 {
		s.withFree[w-1] &= 1<<(n%64) - 1
	}
	s.low = min(s.low, n)
}

// len returns the number of pages held.
func (s *slotPages[T]) len() int { return len(s.pages) }

// slot returns the item at slot i.
func (b *Buffer[T]) slot(i uint32) *T { return b.slots.at(i) }

// store copies item to a free slot and returns the slot.
func (b *Buffer[T]) store(item *T) uint32 {
	slot := b.slots.alloc()
	*b.slot(slot) = *item
	return slot
}

// measure returns the size of the item at p as measured by b.size (0
// without one; at most math.MaxUint32), and counts it.
func (b *Buffer[T]) measure(p *T) uint32 {
	if b.size == nil {
		return 0
	}
	size := uint32(min(b.size(p), math.MaxUint32))
	b.bytes += int64(size)
	return size
}

// take empties e's slot and returns its item.
func (b *Buffer[T]) take(e entry) T {
	p := b.slot(e.slot())
	item := *p
	var zero T
	*p = zero
	b.slots.release(e.slot())
	return item
}
