package file

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Source emits the particles of recordings, one file after the other, as
// fast as downstream takes them. A path ending in ".gz" is read through
// gzip. Package replay paces recordings and merges them by event time.
type Source struct {
	// Paths are the files to read, in order.
	Paths []string
	// Format is the files' format. Defaults to the zero Format: line
	// protocol with nanosecond timestamps.
	Format *Format
	// Track makes every particle tracked by the acker. The source keeps
	// each particle in memory until its tree finishes, to redeliver it.
	Track bool

	retained topology.Retainer // tracked particles until their trees finish
	emitted  atomic.Uint64     // tracked particles emitted: the last message id
}

var (
	_ topology.Source       = (*Source)(nil)
	_ topology.Acknowledger = (*Source)(nil)
)

// Ack implements topology.Acknowledger.
func (s *Source) Ack(msgID uint64) { s.retained.Ack(msgID) }

// Fail implements topology.Acknowledger.
func (s *Source) Fail(msgID uint64, r acker.Reason, err error) { s.retained.Fail(msgID, r, err) }

// Redeliver implements topology.Acknowledger.
func (s *Source) Redeliver(msgID uint64) (particle.Particle, error) {
	return s.retained.Redeliver(msgID)
}

// Run implements topology.Source.
func (s *Source) Run(ctx context.Context, out topology.SourceEmitter) error {
	for _, path := range s.Paths {
		if err := s.readFile(ctx, path, out); err != nil {
			return err
		}
	}
	return nil
}

func (s *Source) readFile(ctx context.Context, path string, out topology.SourceEmitter) error {
	var f Format
	if s.Format != nil {
		f = *s.Format
	}
	r, err := OpenReader(path, f)
	if err != nil {
		return err
	}
	defer r.Close()
	var p particle.Particle
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := r.Read(&p)
		var de *particle.DecodeError
		switch {
		case err == io.EOF:
			return nil
		case errors.As(err, &de):
			out.Reject(err, slices.Clone(r.Raw()))
			continue
		case err != nil:
			return err
		}
		if s.Track {
			err = s.retained.EmitTracked(out, p, s.emitted.Add(1))
		} else {
			err = out.Emit(p)
		}
		if err != nil {
			return err
		}
	}
}

// open opens the file at path and reads it through wrap, then through gzip
// when its name ends in ".gz". It returns the reader and the function that
// closes it.
func open(path string, wrap func(*os.File) io.Reader) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("file: %w", err)
	}
	r := wrap(f)
	if !strings.HasSuffix(path, ".gz") {
		return r, f.Close, nil
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("file: %s: %w", path, err)
	}
	return zr, func() error { return errors.Join(zr.Close(), f.Close()) }, nil
}
