package file

import (
	"bufio"
	"context"
	"io"
	"sync"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// Sink is an operation that writes each data particle it processes as a
// line of line protocol. It is safe for several bolt instances to share
// one Sink, but only one instance keeps the output in event-time order.
type Sink struct {
	mu     sync.Mutex
	w      *bufio.Writer
	c      io.Closer
	enc    particle.Encoder
	closed bool
}

// NewSink returns a Sink writing to w with timestamps at precision prec. If
// w is an io.Closer, closing the Sink closes it.
func NewSink(w io.Writer, prec particle.Precision) *Sink {
	s := &Sink{w: bufio.NewWriterSize(w, 256<<10)}
	s.enc.SetPrecision(prec)
	s.c, _ = w.(io.Closer)
	return s
}

var (
	_ operation.Operation = (*Sink)(nil)
	_ operation.Flusher   = (*Sink)(nil)
)

// Process implements operation.Operation. A write error fails the input.
func (s *Sink) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.enc.Reset()
	if err := s.enc.Encode(&in); err != nil {
		return err
	}
	_, err := s.w.Write(s.enc.Bytes())
	return err
}

// Flush implements operation.Flusher: it writes out what is buffered.
func (s *Sink) Flush(context.Context, operation.Emitter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Flush()
}

// Close flushes and closes the underlying writer if it is a Closer. Calls
// after the first do nothing, so that instances sharing the Sink may each
// close it.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.w.Flush()
	if s.c != nil {
		if cerr := s.c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
