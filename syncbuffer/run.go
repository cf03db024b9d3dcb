package syncbuffer

// maxRunInputs is the most inputs for which the buffer keeps sorted runs:
// Release compares the head of every run, which beyond a few inputs costs
// more than the tree it saves.
const maxRunInputs = 8

// run is a FIFO of entries in increasing order: what one input delivered
// in order, which needs no tree. Sensor streams are mostly in order per
// input, so most entries pass through runs; the tree takes the rest.
type run struct {
	entries []entry
	start   int
}

func (r *run) len() int { return len(r.entries) - r.start }

func (r *run) front() entry { return r.entries[r.start] }

// accepts reports whether e keeps the run in order.
func (r *run) accepts(e entry) bool {
	return r.len() == 0 || lessEntry(r.entries[len(r.entries)-1], e)
}

func (r *run) push(e entry) {
	switch {
	case r.len() == 0:
		r.entries, r.start = r.entries[:0], 0
	case r.start >= len(r.entries)/2 && r.start >= 64:
		// Slide the live entries down rather than grow: a run that is
		// drained as fast as it fills stays the size of what it holds.
		n := copy(r.entries, r.entries[r.start:])
		r.entries, r.start = r.entries[:n], 0
	}
	r.entries = append(r.entries, e)
}

func (r *run) pop() {
	r.start++
	if r.len() == 0 && cap(r.entries) > keepSlots {
		r.entries, r.start = nil, 0
	}
}
