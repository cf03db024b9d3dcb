package syncbuffer

import (
	"math"
	"slices"
)

const (
	// bucketsPerWindow sets the buckets' width: a window's worth of event
	// time spans this many, so that a sorted bucket's entries stay in the
	// processor's cache and few items still arrive for a bucket once the
	// watermark has reached it.
	bucketsPerWindow = 64
	// bucketCount is the number of buckets, spanning four windows of event
	// time from the oldest; items beyond go to the tree. A power of two.
	bucketCount = 4 * bucketsPerWindow
	// maxBucket is the most entries a bucket takes; further items in its
	// time span go to the tree, so that sorting a bucket never stalls the
	// buffer for long.
	maxBucket = 1 << 16
)

// buckets index the items out of order within the window by event time:
// an item is appended to the bucket of its time span, unsorted, and a
// bucket is sorted only once the watermark reaches it, then released in
// order. A push thus costs an append where a tree costs a search among
// every item held, and a bucket's sort touches only its own entries.
//
// The buckets take consecutive spans of width nanoseconds from bucket
// number first on; bucket number n holds the entries whose time divided
// by width, rounded down, is n. The sorted bucket, ready, holds entries
// older than every entry in the buckets: the first bucket's span begins
// where ready's ends. An item older than that, or beyond the last bucket,
// goes elsewhere.
type buckets struct {
	width int64 // 0 when the buffer has no window: no buckets then
	lead  int64 // the window: how far behind an item others may arrive
	first int64
	ring  [bucketCount][]entry
	held  int // entries in ring

	// ready is the bucket sorted last, released from readyAt on.
	ready   []entry
	readyAt int

	// spare holds emptied entry slices for new buckets, spareCap their
	// capacity.
	spare    [][]entry
	spareCap int
}

func newBuckets(window int64) buckets {
	if window <= 0 {
		return buckets{}
	}
	return buckets{width: (window + bucketsPerWindow - 1) / bucketsPerWindow, lead: window}
}

// len returns the number of entries held.
func (q *buckets) len() int { return q.held + len(q.ready) - q.readyAt }

// push adds e unless its time is outside the buckets' spans or its bucket
// is full, and reports whether it did.
func (q *buckets) push(e entry) bool {
	if q.width == 0 {
		return false
	}
	n := floorDiv(e.time, q.width)
	if q.len() == 0 {
		// Nothing held constrains the spans: start them a window before
		// e, where the oldest items that are not late may still arrive.
		q.first = floorDiv(subSat(e.time, q.lead), q.width)
	}
	if n < q.first || uint64(n)-uint64(q.first) >= bucketCount || n > math.MaxInt64-bucketCount {
		return false
	}
	s := &q.ring[uint64(n)%bucketCount]
	if len(*s) >= maxBucket {
		return false
	}
	if *s == nil && len(q.spare) > 0 {
		*s = q.spare[len(q.spare)-1]
		q.spare = q.spare[:len(q.spare)-1]
		q.spareCap -= cap(*s)
	}
	*s = append(*s, e)
	q.held++
	return true
}

// front returns the oldest entry held if it is at or below wm, sorting the
// next bucket when ready is empty and the watermark has reached it.
// Entries above wm may be returned too, but no entry is returned while an
// older one is held.
func (q *buckets) front(wm int64) (entry, bool) {
	if q.readyAt == len(q.ready) && q.held > 0 {
		q.sortNext(floorDiv(wm, q.width))
	}
	if q.readyAt < len(q.ready) {
		return q.ready[q.readyAt], true
	}
	return entry{}, false
}

// pop removes the entry front returned.
func (q *buckets) pop() { q.readyAt++ }

// sortNext makes the first non-empty bucket at or below bucket number last
// ready, sorted; ready is empty.
func (q *buckets) sortNext(last int64) {
	for q.first <= last {
		s := &q.ring[uint64(q.first)%bucketCount]
		q.first++
		if len(*s) == 0 {
			continue
		}
		q.recycle(q.ready[:0])
		q.ready, q.readyAt, *s = *s, 0, nil
		q.held -= len(q.ready)
		slices.SortFunc(q.ready, cmpEntry)
		return
	}
}

// recycle keeps an emptied slice for a new bucket, unless the spares
// already match what the buckets hold: a burst's slices are given back.
func (q *buckets) recycle(s []entry) {
	if cap(s) == 0 {
		return
	}
	if q.spareCap+cap(s) > max(q.held, keepSlots) {
		return
	}
	q.spare = append(q.spare, s)
	q.spareCap += cap(s)
}

func cmpEntry(a, b entry) int {
	switch {
	case lessEntry(a, b):
		return -1
	case lessEntry(b, a):
		return 1
	}
	return 0
}

// floorDiv returns a/d rounded towards minus infinity, for d > 0.
func floorDiv(a, d int64) int64 {
	q := a / d
	if a%d < 0 {
		q--
	}
	return q
}
