package main

import (
	"bufio"
	"context"
	"io"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// lineSinkBuffer is how much line protocol lineSink gathers before it
// writes without waiting for the end of a round.
const lineSinkBuffer = 256 << 10

// lineSink writes particles as line protocol and holds each input until
// its line was handed to the operating system, so that a tree completes
// only once its output survives the process being killed: the spool
// forgets a message when its tree completes. It writes and acknowledges
// after every round of released particles (OnWatermark), when its buffer
// fills, and at the end.
//
// file.Sink acknowledges as soon as a line is in its buffer, which a
// SIGKILL loses.
type lineSink struct {
	w       *bufio.Writer
	c       io.Closer
	prec    particle.Precision
	line    []byte
	held    []operation.Anchor
	written uint64
}

func newLineSink(w io.Writer, prec particle.Precision) *lineSink {
	s := &lineSink{w: bufio.NewWriterSize(w, lineSinkBuffer*2), prec: prec}
	s.c, _ = w.(io.Closer)
	return s
}

var (
	_ operation.Operation        = (*lineSink)(nil)
	_ operation.WatermarkHandler = (*lineSink)(nil)
	_ operation.Flusher          = (*lineSink)(nil)
)

func (s *lineSink) Process(_ context.Context, in particle.Particle, out operation.Emitter) error {
	var err error
	s.line, err = particle.AppendLineProtocol(s.line[:0], &in, s.prec)
	if err != nil {
		return err
	}
	if _, err := s.w.Write(s.line); err != nil {
		return err
	}
	s.held = append(s.held, out.Hold())
	if s.w.Buffered() >= lineSinkBuffer {
		return s.settle(out)
	}
	return nil
}

func (s *lineSink) OnWatermark(_ context.Context, _ int64, out operation.Emitter) error {
	return s.settle(out)
}

func (s *lineSink) Flush(_ context.Context, out operation.Emitter) error { return s.settle(out) }

// settle writes what is buffered and acknowledges the inputs held for it,
// or fails them if the write failed: the engine retries them.
func (s *lineSink) settle(out operation.Emitter) error {
	err := s.w.Flush()
	for _, a := range s.held {
		if err != nil {
			out.Fail(a, err)
		} else {
			out.Ack(a)
		}
	}
	if err == nil {
		s.written += uint64(len(s.held))
	}
	s.held = s.held[:0]
	return nil
}

// Close closes the underlying writer if it is a Closer.
func (s *lineSink) Close() error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	if s.c != nil {
		return s.c.Close()
	}
	return nil
}
