package replay

import (
	"io"

	"github.com/sensorstorm/sensorstorm/particle"
)

// cursor is one input of a merger with its next particle.
type cursor struct {
	in    *readAhead
	index int
	head  *particle.Particle // valid until in is read again
}

// merger merges inputs into one stream ordered by event time, ties broken
// by input order, with a heap of one head particle per input: it holds k
// particles, besides what the inputs read ahead, whatever the size of the
// inputs. In concat mode it orders by input alone, which reads the inputs
// one after the other.
type merger struct {
	heap    []*cursor
	pending []*cursor // cursors whose head must be read before the next pick
	concat  bool
	stats   *counters // counts the records read and skipped
}

func newMerger(inputs []*readAhead, concat bool, stats *counters) *merger {
	m := &merger{concat: concat, stats: stats}
	for i, in := range inputs {
		m.pending = append(m.pending, &cursor{in: in, index: i})
	}
	return m
}

// next returns the next particle, which the caller may modify and which
// is valid until the next call. A malformed record comes as its
// *particle.DecodeError, with its text for a delimited one; next may be
// called again after it. At the end it returns io.EOF; any other error is
// a read error and final.
func (m *merger) next() (p *particle.Particle, raw []byte, err error) {
	for len(m.pending) > 0 {
		c := m.pending[len(m.pending)-1]
		rec := c.in.read()
		m.count(rec)
		if bad := rec.bad; bad != nil {
			if bad.err == io.EOF {
				m.pending = m.pending[:len(m.pending)-1]
				continue
			}
			return nil, bad.raw, bad.err
		}
		c.head = &rec.p
		m.pending = m.pending[:len(m.pending)-1]
		m.push(c)
	}
	if len(m.heap) == 0 {
		return nil, nil, io.EOF
	}
	c := m.heap[0]
	// The head is replaced on the next call, which also restores the heap.
	m.pop()
	m.pending = append(m.pending, c)
	return c.head, nil, nil
}

// count counts rec, good or malformed, and the records skipped before it,
// as read.
func (m *merger) count(rec *record) {
	n := rec.skipped
	if rec.bad == nil || (rec.bad.err != io.EOF && isDecodeError(rec.bad.err)) {
		n++
	}
	if rec.skipped > 0 {
		m.stats.skipped.Add(uint64(rec.skipped))
	}
	if n > 0 {
		m.stats.read.Add(uint64(n))
	}
}

func (m *merger) less(a, b *cursor) bool {
	if !m.concat && a.head.Time != b.head.Time {
		return a.head.Time < b.head.Time
	}
	return a.index < b.index
}

func (m *merger) push(c *cursor) {
	m.heap = append(m.heap, c)
	i := len(m.heap) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !m.less(m.heap[i], m.heap[parent]) {
			break
		}
		m.heap[i], m.heap[parent] = m.heap[parent], m.heap[i]
		i = parent
	}
}

func (m *merger) pop() {
	n := len(m.heap) - 1
	m.heap[0] = m.heap[n]
	m.heap[n] = nil
	m.heap = m.heap[:n]
	i := 0
	for {
		l, r, least := 2*i+1, 2*i+2, i
		if l < n && m.less(m.heap[l], m.heap[least]) {
			least = l
		}
		if r < n && m.less(m.heap[r], m.heap[least]) {
			least = r
		}
		if least == i {
			return
		}
		m.heap[i], m.heap[least] = m.heap[least], m.heap[i]
		i = least
	}
}
