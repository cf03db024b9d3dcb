package replay

import (
	"io"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/particle"
)

// cursor is one input of a merger with its next particle.
type cursor struct {
	r     *file.Reader
	index int
	head  particle.Particle
	skips int // r.Skipped() when last looked at
}

// merger merges readers into one stream ordered by event time, ties
// broken by input order, with a heap of one head particle per input: it
// holds k particles, whatever the size of the inputs. In concat mode it
// orders by input alone, which reads the inputs one after the other.
type merger struct {
	heap    []*cursor
	pending []*cursor // cursors whose head must be read before the next pick
	concat  bool
	// onRecord is told of every record read, good or not, and of records
	// skipped by a reader.
	onRecord func(n int)
}

func newMerger(readers []*file.Reader, concat bool, onRecord func(int)) *merger {
	m := &merger{concat: concat, onRecord: onRecord}
	for i, r := range readers {
		m.pending = append(m.pending, &cursor{r: r, index: i})
	}
	return m
}

// next returns the next particle and its reader. A *particle.DecodeError
// comes with the reader that reported it; next may be called again after
// it. At the end it returns io.EOF.
func (m *merger) next(p *particle.Particle) (*file.Reader, error) {
	for len(m.pending) > 0 {
		c := m.pending[len(m.pending)-1]
		err := c.r.Read(&c.head)
		if n := c.r.Skipped(); n != c.skips {
			m.onRecord(n - c.skips)
			c.skips = n
		}
		switch {
		case err == io.EOF:
			m.pending = m.pending[:len(m.pending)-1]
			continue
		case err != nil:
			if isDecodeError(err) {
				m.onRecord(1)
			}
			return c.r, err
		}
		m.onRecord(1)
		m.pending = m.pending[:len(m.pending)-1]
		m.push(c)
	}
	if len(m.heap) == 0 {
		return nil, io.EOF
	}
	c := m.heap[0]
	*p = c.head
	// The head is replaced on the next call, which also restores the heap.
	m.pop()
	m.pending = append(m.pending, c)
	return c.r, nil
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
