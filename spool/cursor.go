package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

const (
	// cursorChunk is how many bytes a cursor reads from a segment at once.
	cursorChunk = 1 << 20
	// maxFrameBody bounds a data frame's body: its kind, its sequence
	// number and the largest record.
	maxFrameBody = 1 + 8 + MaxRecordSize
)

// cursor reads a spool's durable records back in sequence order, from the
// segment files, while the spool goes on writing: see Backlog. It is used
// by one goroutine.
type cursor struct {
	s    *Spool
	next uint64 // the sequence number of the next record to hand out
	// f is the segment being read, from its first record first; off is
	// where buf's bytes start in it, pos where the next frame starts in
	// buf.
	f     *os.File
	first uint64
	off   int64
	buf   []byte
	pos   int
}

func newCursor(s *Spool, from uint64) *cursor {
	return &cursor{s: s, next: from}
}

// read calls fn, in order, for the records not completed among those
// numbered from c.next to before to, which must all be durable, until it
// handed out max records, or as many bytes of records as would pass
// maxBytes with the next (but at least one), or fn returns an error,
// which read returns. Completed records (a previous process finished
// them) are passed over. data is valid only during the call.
func (c *cursor) read(to uint64, max int, maxBytes int64, fn func(seq uint64, data []byte) error) error {
	var size int64
	// Records are rarely completed before they are read (a previous
	// process finished them): one look under the lock finds those that
	// are all live ahead, not one per record. A record completed
	// meanwhile may be handed out, as it may once read.
	c.s.mu.Lock()
	live := c.s.liveUntilLocked(c.next, min(to, c.next+uint64(max)))
	c.s.mu.Unlock()
	for n := 0; n < max && c.next < to; {
		f, flen, err := c.frame()
		if err != nil {
			return err
		}
		switch f.kind {
		case kindGap:
			c.next += f.seq
		case kindData:
			if f.seq < c.next {
				continue // before the start: the segment is read from its first frame
			}
			if n > 0 && size+int64(len(f.data)) > maxBytes {
				c.pos -= flen // for the next read
				return nil
			}
			size += int64(len(f.data))
			c.next = f.seq + 1
			if f.seq >= live {
				c.s.mu.Lock()
				ok := c.s.liveLocked(f.seq)
				c.s.mu.Unlock()
				if !ok {
					continue
				}
			}
			n++
			if err := fn(f.seq, f.data); err != nil {
				return err
			}
		}
	}
	return nil
}

// frame returns the next intact frame and its length, moving on to the next segment at
// the end of one. It is called only while a durable record is still to
// come, so a frame that is cut short or damaged is damage, not a write
// in progress.
func (c *cursor) frame() (frame, int, error) {
	for {
		if c.f == nil {
			if err := c.open(); err != nil {
				return frame{}, 0, err
			}
		}
		if f, n, err := nextFrame(c.buf[c.pos:]); err == nil {
			c.pos += n
			return f, n, nil
		}
		whole, err := c.fill()
		if err != nil {
			return frame{}, 0, err
		}
		if whole {
			continue
		}
		c.s.mu.Lock()
		g := c.s.segmentLocked(c.next)
		c.s.mu.Unlock()
		if g != nil && g.first == c.first {
			if len(c.buf) > 0 {
				_, _, err := nextFrame(c.buf)
				return frame{}, 0, c.damage(err)
			}
			return frame{}, 0, c.damage(errTorn)
		}
		// The segment's frames end: the records to come are in the next.
		c.close()
	}
}

// fill reads the segment afresh from the next frame on, a chunk or the
// whole frame if it is longer, and reports whether a whole frame is there:
// false where the file or its frames end, before the space preallocated
// for later frames. Bytes read earlier past the last frame handed out are
// read again: they may have been zeros the writer has filled since.
func (c *cursor) fill() (bool, error) {
	c.off += int64(c.pos)
	c.pos = 0
	want := cursorChunk
	for {
		if cap(c.buf) < want {
			c.buf = make([]byte, want)
		}
		n, err := c.f.ReadAt(c.buf[:want], c.off)
		if err != nil && !errors.Is(err, io.EOF) {
			return false, fmt.Errorf("spool: read %s: %w", c.f.Name(), err)
		}
		c.buf = c.buf[:n]
		if n < headerLen || preallocated(c.buf[:headerLen]) {
			if preallocated(c.buf) {
				c.buf = c.buf[:0]
			}
			return false, nil
		}
		l := binary.LittleEndian.Uint32(c.buf[4:])
		if l > maxFrameBody {
			return false, c.damage(errFrame)
		}
		switch {
		case n >= headerLen+int(l):
			return true, nil
		case n < want:
			return false, nil // the file ends within the frame
		}
		want = headerLen + int(l)
	}
}

// open opens the segment that holds c.next.
func (c *cursor) open() error {
	c.s.mu.Lock()
	seg := c.s.segmentLocked(c.next)
	var path string
	if seg != nil {
		path, c.first = seg.path, seg.first
	}
	c.s.mu.Unlock()
	if seg == nil {
		return fmt.Errorf("spool: no segment holds record %d", c.next)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	c.f, c.off, c.buf, c.pos = f, 0, c.buf[:0], 0
	return nil
}

func (c *cursor) close() {
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
}

func (c *cursor) damage(err error) error {
	return &CorruptError{Damage: []Damage{{Path: c.f.Name(), Offset: c.off + int64(c.pos), Err: err}}}
}

// segmentLocked returns the segment whose numbers include seq, or the
// first one after it; nil if there is none. s.mu is held.
func (s *Spool) segmentLocked(seq uint64) *segment {
	for _, g := range s.segs {
		if seq < g.first+g.count || g.count == 0 {
			return g
		}
	}
	return nil
}

// liveUntilLocked returns the first of the numbers from seq to before to
// that is not a record not completed, or to. s.mu is held.
func (s *Spool) liveUntilLocked(seq, to uint64) uint64 {
	for g := s.segmentLocked(seq); seq < to && g != nil && g.isLive(seq); seq++ {
		if seq+1 >= g.first+g.count {
			g = s.segmentLocked(seq + 1)
		}
	}
	return seq
}

// liveLocked reports whether seq is a record not completed. s.mu is held.
func (s *Spool) liveLocked(seq uint64) bool {
	g := s.segmentLocked(seq)
	return g != nil && g.isLive(seq)
}
