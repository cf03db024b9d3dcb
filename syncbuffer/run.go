package syncbuffer

// maxRunInputs is the most inputs for which the buffer keeps sorted runs:
// Release compares the head of every run, which beyond a few inputs costs
// more than the tree it saves.
const maxRunInputs = 8

const (
	// runBlockShift sets the size of the blocks that hold a run's entries:
	// 256 entries, 8 KiB, so that a run growing by a block is cheap and a
	// run that holds few entries takes little memory.
	runBlockShift = 8
	runBlockSize  = 1 << runBlockShift
	// keepRunBlocks is how many drained blocks a run keeps for new
	// entries: a run that fills and drains at the same pace does not
	// allocate.
	keepRunBlocks = keepSlots / runBlockSize
)

// runBlock holds entries; it has no pointers for the garbage collector
// to scan.
type runBlock [runBlockSize]entry

// run is a FIFO of entries in increasing order: what one input delivered
// in order, which needs no tree. Sensor streams are mostly in order per
// input, so most entries pass through runs; the tree takes the rest.
//
// Its entries lie in blocks, so that growing never copies an entry, and a
// drained block is kept for the run's next entries or given back: a
// run's memory follows what it holds, not the most it ever held.
type run struct {
	// blocks[first:] hold the entries, from place start in head,
	// blocks[first], to place end in tail, the last block; blocks before
	// first were drained.
	blocks []*runBlock
	first  int
	head   *runBlock
	start  int
	tail   *runBlock
	end    int
	n      int
	spare  []*runBlock
}

func (r *run) len() int { return r.n }

func (r *run) front() entry { return r.head[r.start] }

// each calls fn with the run's entries in order.
func (r *run) each(fn func(entry)) {
	if r.n == 0 {
		return
	}
	for i, blk := range r.blocks[r.first:] {
		lo, hi := 0, runBlockSize
		if i == 0 {
			lo = r.start
		}
		if blk == r.tail {
			hi = r.end
		}
		for _, e := range blk[lo:hi] {
			fn(e)
		}
	}
}

// accepts reports whether e keeps the run in order.
func (r *run) accepts(e entry) bool {
	return r.n == 0 || lessEntry(r.tail[r.end-1], e)
}

func (r *run) push(e entry) {
	if r.tail == nil || r.end == runBlockSize {
		r.tail, r.end = r.newBlock(), 0
		r.blocks = append(r.blocks, r.tail)
		if r.head == nil {
			r.head, r.start = r.tail, 0
		}
	}
	r.tail[r.end] = e
	r.end++
	r.n++
}

func (r *run) newBlock() *runBlock {
	if n := len(r.spare); n > 0 {
		b := r.spare[n-1]
		r.spare = r.spare[:n-1]
		return b
	}
	return new(runBlock)
}

func (r *run) pop() {
	r.start++
	r.n--
	if r.n == 0 {
		for _, b := range r.blocks[r.first:] {
			r.drop(b)
		}
		clear(r.blocks)
		r.blocks, r.first = r.blocks[:0], 0
		r.head, r.start, r.tail, r.end = nil, 0, nil, 0
		if cap(r.blocks) > keepRunBlocks {
			r.blocks = nil
		}
		return
	}
	if r.start < runBlockSize {
		return
	}
	r.drop(r.head)
	r.blocks[r.first] = nil
	r.first++
	r.head, r.start = r.blocks[r.first], 0
	if live := len(r.blocks) - r.first; r.first >= live {
		// Slide the live blocks down rather than grow: blocks stays
		// twice the size of what the run holds at most.
		n := copy(r.blocks, r.blocks[r.first:])
		clear(r.blocks[n:])
		r.blocks, r.first = r.blocks[:n], 0
	}
}

// drop keeps a drained block for new entries, unless enough are kept.
func (r *run) drop(b *runBlock) {
	if len(r.spare) < keepRunBlocks {
		r.spare = append(r.spare, b)
	}
}
