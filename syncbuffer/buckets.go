package syncbuffer

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

const (
	// bucketsPerWindow sets the buckets' width: a window's worth of event
	// time spans this many, so that a sorted bucket stays in the
	// processor's cache and few items still arrive for a bucket once the
	// watermark has reached it.
	bucketsPerWindow = 64
	// bucketCount is the number of buckets, spanning four windows of event
	// time from the oldest; items beyond go to the tree. A power of two.
	bucketCount = 4 * bucketsPerWindow
	// placeBits is how many low bits of an order value hold the entry's
	// place in its bucket (see sortReady).
	placeBits = 16
	placeMask = 1<<placeBits - 1
	// maxBucket is the most items a bucket takes, as many as placeBits
	// number; further items in its time span go to the tree, so that
	// sorting a bucket never stalls the buffer for long.
	maxBucket = 1 << placeBits
	// spreadMin is the least entries a bucket needs for spreadSort,
	// which spreads them over at most 1<<spreadBits ranges of time.
	spreadMin  = 32
	spreadBits = 11
	// gatherBatch is how many items gather copies at a time.
	gatherBatch = 128

	// chunkShift sets the size of the chunks that hold a bucket's items:
	// 32, so that a bucket holding few items takes little memory.
	chunkShift = 5
	chunkSize  = 1 << chunkShift
	chunkMask  = chunkSize - 1
)

// chunk holds items by value, and what their entries hold beyond their
// keys: marks[i] is the arrival counter and size of items[i], as in
// entry.origin and entry.held. The keys are read from the items again
// when their bucket is sorted, which costs less than the memory to keep
// them.
type chunk[T any] struct {
	marks [chunkSize]uint64 // arrival<<32 | size
	items [chunkSize]T
}

// bucket holds items in arrival order, in chunks, so that growing never
// moves or copies one.
type bucket[T any] struct {
	chunks []*chunk[T]
	n      int // items held
}

func (bk *bucket[T]) at(i uint32) *T { return &bk.chunks[i>>chunkShift].items[i&chunkMask] }

// buckets index the items out of order within the window by event time:
// an item is appended to the bucket of its time span, unsorted, and a
// bucket's entries are sorted only once the watermark reaches it, then
// released in order. A push thus costs an append where a tree costs a
// search among every item held; a bucket's items lie together, written
// in sequence and read back from a small stretch of memory.
//
// The buckets take consecutive spans of width nanoseconds from bucket
// number first on; bucket number n holds the entries whose time divided
// by width, rounded down, is n. The bucket sorted last, ready, holds
// entries older than every entry in the others: the first bucket's span
// begins where ready's ends. An item older than that, or beyond the last
// bucket, goes elsewhere.
type buckets[T any] struct {
	key   func(*T) Key
	width int64 // 0 when the buffer has no window: no buckets then
	lead  int64 // the window: how far behind an item others may arrive
	first int64
	ring  [bucketCount]bucket[T]
	held  int // items in ring

	// ready is the bucket sorted last, released from readyAt on, in the
	// order of bucketOrder.
	ready   bucket[T]
	readyAt int
	bucketOrder
	// batch and batchItems hold copies of ready's entries from batchAt
	// on and of their items, in release order (see gather).
	batch      []entry
	batchItems []T
	batchAt    int

	// spareBuckets and spareChunks hold what drained buckets give back,
	// for new buckets: their lists of chunks, emptied, and their chunks,
	// cleared.
	spareBuckets []bucket[T]
	spareChunks  []*chunk[T]
	spareCap     int // the spare lists' capacity in items
}

// bucketOrder is a bucket sorted by sortBucket: entries holds the entries
// of its items by place, and order their places in release order.
type bucketOrder struct {
	entries []entry
	order   []uint64
	scratch []uint64 // spreadSort's second buffer
}

func newBuckets[T any](window int64, key func(*T) Key) buckets[T] {
	if window <= 0 {
		return buckets[T]{}
	}
	return buckets[T]{key: key, width: (window-1)/bucketsPerWindow + 1, lead: window}
}

// len returns the number of items held.
func (q *buckets[T]) len() int { return q.held + q.ready.n - q.readyAt }

// push adds a copy of item with its entry e unless its time is outside the
// buckets' spans or its bucket is full, and reports whether it did. e must
// be the entry of item's key.
func (q *buckets[T]) push(e entry, item *T) bool {
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
	bk := &q.ring[uint64(n)%bucketCount]
	i := bk.n
	if i >= maxBucket {
		return false
	}
	if bk.chunks == nil && len(q.spareBuckets) > 0 {
		*bk = q.spareBuckets[len(q.spareBuckets)-1]
		q.spareBuckets = q.spareBuckets[:len(q.spareBuckets)-1]
		q.spareCap -= cap(bk.chunks) * chunkSize
	}
	if i&chunkMask == 0 {
		bk.chunks = append(bk.chunks, q.newChunk())
	}
	c := bk.chunks[i>>chunkShift]
	c.marks[i&chunkMask] = e.origin<<32 | e.held&math.MaxUint32
	c.items[i&chunkMask] = *item
	bk.n++
	q.held++
	return true
}

func (q *buckets[T]) newChunk() *chunk[T] {
	if n := len(q.spareChunks); n > 0 {
		c := q.spareChunks[n-1]
		q.spareChunks = q.spareChunks[:n-1]
		return c
	}
	return new(chunk[T])
}

// front returns the oldest entry held if it is at or below wm, sorting the
// next bucket when ready is empty and the watermark has reached it.
// Entries above wm may be returned too, but no entry is returned while an
// older one is held.
func (q *buckets[T]) front(wm int64) (entry, bool) {
	if q.readyAt == q.ready.n {
		if q.held == 0 {
			return entry{}, false
		}
		q.sortNext(floorDiv(wm, q.width))
		if q.readyAt == q.ready.n {
			return entry{}, false
		}
	}
	i := q.readyAt - q.batchAt
	if i == len(q.batch) {
		q.gather()
		i = 0
	}
	return q.batch[i], true
}

// at returns the item of the entry front returned.
func (q *buckets[T]) at() *T { return &q.batchItems[q.readyAt-q.batchAt] }

// pop removes the entry front returned and returns its item.
func (q *buckets[T]) pop() *T {
	p := q.at()
	q.readyAt++
	return p
}

// gather copies the next gatherBatch entries of ready, from readyAt on,
// and their items to the batch, in release order. A bucket's items lie in
// arrival order, which is not their order of release: read one at a time,
// each would be a wait on memory, where a batch lets the processor fetch
// many at once.
func (q *buckets[T]) gather() {
	n := min(gatherBatch, q.ready.n-q.readyAt)
	if q.batch == nil {
		q.batch, q.batchItems = make([]entry, 0, gatherBatch), make([]T, 0, gatherBatch)
	}
	q.batch, q.batchItems = q.batch[:n], q.batchItems[:n]
	for i, o := range q.order[q.readyAt : q.readyAt+n] {
		q.batch[i] = q.entries[o&placeMask]
		q.batchItems[i] = *q.ready.at(uint32(o & placeMask))
	}
	q.batchAt = q.readyAt
}

// sortNext makes the first non-empty bucket at or below bucket number last
// ready, sorted; ready is drained.
func (q *buckets[T]) sortNext(last int64) {
	for q.first <= last {
		n := q.first
		bk := &q.ring[uint64(n)%bucketCount]
		q.first++
		if bk.n == 0 {
			continue
		}
		q.recycle(q.ready)
		q.ready, q.readyAt, *bk = *bk, 0, bucket[T]{}
		q.held -= q.ready.n
		q.sortBucket(&q.bucketOrder, &q.ready, n)
		clear(q.batchItems)
		q.batch, q.batchItems, q.batchAt = q.batch[:0], q.batchItems[:0], 0
		return
	}
}

// sortBucket sorts the entries of bk, bucket number n, into o. Sorting
// integers compares inline where sorting entries calls a function for
// each comparison: an entry's place in the bucket goes in the low bits,
// below its time's offset in the bucket, and entries with equal times
// are then put in key order.
func (q *buckets[T]) sortBucket(o *bucketOrder, bk *bucket[T], n int64) {
	es, order := reuse(o.entries, bk.n), reuse(o.order, bk.n)
	for c, ch := range bk.chunks {
		for j := range min(chunkSize, bk.n-c*chunkSize) {
			k, mark := q.key(&ch.items[j]), ch.marks[j]
			e := entry{time: k.Time, seq: k.Seq, origin: uint64(k.Origin)<<32 | mark>>32, held: mark & math.MaxUint32}
			// The offset is below width: computed with wrapping, it is
			// right even where n*width overflows.
			order = append(order, uint64(e.time-n*q.width)<<placeBits|uint64(len(es)))
			es = append(es, e)
		}
	}
	o.entries, o.order = es, order
	byEntry := func(a, b uint64) int { return cmpEntry(es[a&placeMask], es[b&placeMask]) }
	if q.width > math.MaxUint64>>placeBits {
		slices.SortFunc(order, byEntry)
		return
	}
	if len(order) < spreadMin {
		slices.Sort(order)
	} else {
		o.order, o.scratch = spreadSort(order, reuse(o.scratch, bk.n), bits.Len64(uint64(q.width-1)))
		order = o.order
	}
	for i := 0; i < len(order); {
		j := i + 1
		for j < len(order) && order[j]>>placeBits == order[i]>>placeBits {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(order[i:j], byEntry)
		}
		i = j
	}
}

// ordered calls fn with the entry and item of every item held, in
// release order: ready's, then each other bucket's, sorted aside. It
// changes nothing.
func (q *buckets[T]) ordered(fn func(e entry, item *T)) {
	emit := func(o *bucketOrder, bk *bucket[T], from int) {
		for _, x := range o.order[from:bk.n] {
			fn(o.entries[x&placeMask], bk.at(uint32(x&placeMask)))
		}
	}
	emit(&q.bucketOrder, &q.ready, q.readyAt)
	var o bucketOrder
	for n, left := q.first, q.held; left > 0; n++ {
		bk := &q.ring[uint64(n)%bucketCount]
		if bk.n > 0 {
			q.sortBucket(&o, bk, n)
			emit(&o, bk, 0)
			left -= bk.n
		}
	}
}

// spreadSort sorts keys whose bits above placeBits are below 1<<width.
// It spreads them by their top bits over as many ranges as there are
// keys, up to 1<<spreadBits, in one counting pass, then sorts each range,
// which holds few keys unless their times cluster. It returns the keys
// sorted and the other buffer, which it uses and grows as needed.
func spreadSort(keys, scratch []uint64, width int) (sorted, spare []uint64) {
	if cap(scratch) < len(keys) {
		scratch = make([]uint64, len(keys))
	}
	dst := scratch[:len(keys)]
	digit := min(bits.Len(uint(len(keys))), spreadBits)
	shift := placeBits + max(width-digit, 0)
	var counts [1 << spreadBits]uint32
	count := counts[:1<<digit]
	for _, k := range keys {
		count[k>>shift]++
	}
	sum := uint32(0)
	for d, c := range count {
		count[d] = sum
		sum += c
	}
	for _, k := range keys {
		d := k >> shift
		dst[count[d]] = k
		count[d]++
	}
	// count[d] is now where range d ends.
	start := uint32(0)
	for _, end := range count {
		if end-start > 1 {
			slices.Sort(dst[start:end])
		}
		start = end
	}
	return dst, keys
}

// recycle keeps a drained bucket's chunks and list of them for new buckets,
// as many as the buckets hold items, and gives back the rest: a burst's
// memory is given back once it is released.
func (q *buckets[T]) recycle(bk bucket[T]) {
	keep := max(q.held, keepSlots)
	for _, c := range bk.chunks {
		if len(q.spareChunks)*chunkSize >= keep {
			break
		}
		clear(c.items[:])
		q.spareChunks = append(q.spareChunks, c)
	}
	if bk.chunks != nil {
		clear(bk.chunks)
		q.spareBuckets = append(q.spareBuckets, bucket[T]{chunks: bk.chunks[:0]})
		q.spareCap += cap(bk.chunks) * chunkSize
	}
	// What was kept while the buckets held more goes now.
	for n := len(q.spareChunks); n*chunkSize > keep; n-- {
		q.spareChunks[n-1] = nil
		q.spareChunks = q.spareChunks[:n-1]
	}
	for n := len(q.spareBuckets); q.spareCap > keep; n-- {
		q.spareCap -= cap(q.spareBuckets[n-1].chunks) * chunkSize
		q.spareBuckets[n-1] = bucket[T]{}
		q.spareBuckets = q.spareBuckets[:n-1]
	}
}

// reuse returns s emptied for n elements, or nil if its capacity is more
// than twice that and keepSlots: what a burst's buckets needed is given
// back once they are small again.
func reuse[E any](s []E, n int) []E {
	if cap(s) > 2*max(n, keepSlots) {
		return nil
	}
	return s[:0]
}

// cmpEntry is lessEntry as a three-way comparison, for sorting.
func cmpEntry(a, b entry) int {
	if a.time != b.time {
		return cmp.Compare(a.time, b.time)
	}
	if a.origin>>32 != b.origin>>32 {
		return cmp.Compare(a.origin, b.origin)
	}
	if a.seq != b.seq {
		return cmp.Compare(a.seq, b.seq)
	}
	return int(int32(uint32(a.origin) - uint32(b.origin)))
}

// floorDiv returns a/d rounded towards minus infinity, for d > 0.
func floorDiv(a, d int64) int64 {
	q := a / d
	if a%d < 0 {
		q--
	}
	return q
}
