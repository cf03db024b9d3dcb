package topology

import (
	"sync"
	"unsafe"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
)

// anchor ties a particle to one source tree: the tree's root and the
// particle's own edge id in it.
type anchor struct {
	root acker.RootID
	edge uint64
}

// envelope is a particle in transit with the trees it belongs to. Most
// particles belong to one tree or none, so the first anchor is inline.
type envelope struct {
	p particle.Particle
	// high is the sender's high-water mark on the stream when it sent the
	// particle: lateness at the receiver is judged against it, so that it
	// depends on the sender's stream alone, never on timing.
	high  int64
	first anchor
	// more holds further trees, for particles anchored across roots:
	// behind a pointer, since most particles have none and an envelope
	// is held by value in sync buffers and batches.
	more    *[]anchor
	tracked bool
	replay  bool // emitted again after a failure, or derived from such a particle
}

// each calls fn for every tree the envelope belongs to.
func (e *envelope) each(fn func(a anchor)) {
	if !e.tracked {
		return
	}
	fn(e.first)
	for _, a := range e.moreAnchors() {
		fn(a)
	}
}

// moreAnchors returns the further trees of the envelope.
func (e *envelope) moreAnchors() []anchor {
	if e.more == nil {
		return nil
	}
	return *e.more
}

// addMore adds the tree of a to the further trees.
func (e *envelope) addMore(a anchor) {
	if e.more == nil {
		e.more = &[]anchor{a}
		return
	}
	*e.more = append(*e.more, a)
}

func envelopeKey(e *envelope) syncbuffer.Key {
	return syncbuffer.Key{Time: e.p.Time, Origin: e.p.Origin, Seq: e.p.Seq, High: e.high}
}

func envelopeIsMeta(e *envelope) bool { return e.p.Meta != nil }

// envelopeSize estimates the bytes an envelope holds in a sync buffer: the
// envelope and its tag, field and anchor slices. Strings are left out: a
// decoder's particles share them, and counting them would cost a pass over
// every tag and field twice per particle.
func envelopeSize(e *envelope) int {
	return int(unsafe.Sizeof(*e)) + len(e.p.Tags)*int(unsafe.Sizeof(particle.Tag{})) +
		len(e.p.Fields)*int(unsafe.Sizeof(particle.Field{})) + len(e.moreAnchors())*int(unsafe.Sizeof(anchor{}))
}

// batch is the unit that travels between instances. high and promise are
// the sender's progress after its items (see syncbuffer.Buffer.Advance): a
// batch without items only announces it. drained marks the end of its
// sender's new data: only replays of failed particles may follow, so the
// receiver stops waiting for this input and flushes. eos marks the last
// batch from its sender.
type batch struct {
	input   int
	items   []envelope
	high    int64
	promise int64
	drained bool
	eos     bool
	// self is the batch's own edge in its tree when it came from a Feed:
	// acked once the receiver handed on its progress and marks.
	self anchor
	// quiet marks a batch of checkpoint barriers and nothing else: no
	// data, no other meta particle, no progress its receiver was not
	// told. It is no sign of life, so that a live input that went quiet
	// stays idle through checkpoints and its last window closes.
	quiet bool
}

// batchPool recycles batches so that steady-state transport does not
// allocate.
type batchPool struct {
	size int
	pool sync.Pool
}

func newBatchPool(size int) *batchPool {
	bp := &batchPool{size: size}
	bp.pool.New = func() any { return &batch{items: make([]envelope, 0, size)} }
	return bp
}

func (bp *batchPool) get(input int) *batch {
	b := bp.pool.Get().(*batch)
	b.input = input
	return b
}

func (bp *batchPool) put(b *batch) {
	clear(b.items)
	b.items, b.drained, b.eos, b.self, b.quiet = b.items[:0], false, false, anchor{}, false
	bp.pool.Put(b)
}
