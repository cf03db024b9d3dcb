package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// DefaultSinkBuffer is how many bytes of lines a Sink gathers before it
// writes them without waiting for the watermark or the next tick.
const DefaultSinkBuffer = 256 << 10

// ErrSinkClosed is returned by a Sink's Process after Close.
var ErrSinkClosed = errors.New("file: sink closed")

// SinkConfig configures a Sink. The zero SinkConfig is valid.
type SinkConfig struct {
	// Precision is the unit of the timestamps written. Defaults to
	// nanoseconds.
	Precision particle.Precision `yaml:"precision"`
	// Fsync makes the Sink fsync its file after every write and
	// acknowledge its inputs only then, so that they survive the machine
	// failing, not only the process. The writer must have a Sync method
	// that succeeds (a file; not a pipe or a terminal). Defaults to false:
	// an input is acknowledged once its line was handed to the operating
	// system, which survives the process being killed.
	Fsync bool `yaml:"fsync"`
	// Append makes OpenSink add to an existing file instead of truncating
	// it. A last line without its newline, torn by a crash or a full
	// disk, is cut off first, and the cut logged: what follows would run
	// into it. Defaults to false.
	//
	// Either way the Sink changes the file only when it first writes (or
	// closes) or is restored: a restore (see [Sink.Restore]) cuts the file
	// at the checkpoint's length instead, and keeps what comes before it.
	Append bool `yaml:"append"`
	// Adopt makes a restore take over the file of another path that the
	// checkpoint recorded, as a sink that moved between the workers of a
	// cluster does, each worker writing a file of its own: [Sink.Restore]
	// cuts that file back to the checkpoint's length and the Sink writes
	// it from then on, so that across the move each line is written once.
	// Where that file is not (another machine's), or no longer holds the
	// checkpoint's bytes, the Sink logs it and goes on with its own file,
	// and what it writes after the checkpoint may repeat lines the other
	// file holds. With Adopt, a restore may come after writes too: the
	// lines not yet written are dropped, as the instance that gathered
	// them was. Defaults to false.
	Adopt bool `yaml:"-"`
	// BufferSize is how many bytes of lines the Sink gathers before it
	// writes them, whatever the watermark. Defaults to DefaultSinkBuffer.
	BufferSize int `yaml:"buffer_size"`
	// Logger receives what OpenSink cuts off. Defaults to discarding it.
	Logger *slog.Logger `yaml:"-"`
}

func (c *SinkConfig) setDefaults() {
	if c.BufferSize == 0 {
		c.BufferSize = DefaultSinkBuffer
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports a negative buffer size or an unknown precision.
func (c *SinkConfig) Validate() error {
	if c.BufferSize < 0 {
		return fmt.Errorf("file: invalid sink config: buffer size %d < 0", c.BufferSize)
	}
	if c.Precision > particle.Second {
		return fmt.Errorf("file: invalid sink config: precision %d", c.Precision)
	}
	return nil
}

// WriteError is a Sink's failure to write to its destination. It matches
// operation.ErrDestination: the destination failed, not the data, and the
// engine retries the call that returned it. The Sink keeps the lines it
// could not write and the inputs it holds for them, neither acknowledged
// nor failed, and writes them at the next try.
type WriteError struct {
	// Path is the file written, empty for a writer the Sink did not open.
	Path string
	// Unwritten is, in the error of Close, how many lines were left
	// unwritten (a torn one counts); their inputs were not acknowledged.
	Unwritten int
	Err       error
}

// Error implements error.
func (e *WriteError) Error() string {
	what := "file: write"
	if e.Path != "" {
		what += " " + e.Path
	}
	if e.Unwritten > 0 {
		return fmt.Sprintf("%s: %d lines left unwritten, their inputs not acknowledged: %v", what, e.Unwritten, e.Err)
	}
	return fmt.Sprintf("%s: %v", what, e.Err)
}

// Unwrap returns operation.ErrDestination and the error of the write.
func (e *WriteError) Unwrap() []error { return []error{operation.ErrDestination, e.Err} }

// Sink is an operation that writes each data particle it processes as a
// line of line protocol, and acknowledges an input only once its line is
// durable: handed to the operating system, and fsynced with
// SinkConfig.Fsync. It holds every input (operation.Emitter.Hold) and
// acknowledges the inputs held once the lines gathered so far are
// written: when the watermark progresses, on every tick of the engine's
// housekeeping (100 ms by default: a terminal sees output live), when
// the lines fill SinkConfig.BufferSize, and at the end of the stream.
//
// When the destination fails, the Sink neither acknowledges nor fails
// what it holds: OnWatermark, OnTick and Flush return a *WriteError, and
// the Sink tries again each time. While the failure lasts, Process takes
// no new input: it returns the *WriteError without holding the input.
// The engine retries each such call with backoff (operation.ErrDestination).
// A line that cannot be encoded is bad data: Process fails its input.
//
// A Sink may be shared by several bolt instances (operation.Stateless);
// each instance's inputs are acknowledged through its own emitter, but
// only one instance keeps the output in event-time order.
//
// A Sink implements operation.Snapshotter: with checkpoints, the file of
// OpenSink is written exactly once, however often the run is killed and
// restored (see [Sink.Snapshot]); a writer (standard output, a pipe) is
// written at least once.
type Sink struct {
	cfg  SinkConfig
	w    io.Writer
	file *os.File // opened by OpenSink: Close closes it
	// path is the absolute path of a regular file opened by OpenSink,
	// which the Sink can cut back at a restore; empty otherwise.
	path string
	// created is whether OpenSink created the file: a checkpoint that
	// recorded bytes in it cannot be restored.
	created bool
	// ready is whether the file was prepared for writing as cfg says
	// (truncated, or its torn last line cut off) or restored; OpenSink
	// leaves that to the first write or to Restore, so that a restore
	// keeps what the checkpoint holds.
	ready bool
	// broken is the error of a refused Restore, which left the Sink
	// unusable.
	broken error

	mu      sync.Mutex
	buf     []byte // lines not written yet
	unsaved bool   // written and not yet fsynced (SinkConfig.Fsync)
	held    map[operation.Emitter][]operation.Anchor
	err     error // the destination failure, until a write succeeds
	written uint64
	closed  bool
}

var (
	_ operation.Operation        = (*Sink)(nil)
	_ operation.WatermarkHandler = (*Sink)(nil)
	_ operation.TickHandler      = (*Sink)(nil)
	_ operation.Flusher          = (*Sink)(nil)
	_ operation.Snapshotter      = (*Sink)(nil)
	_ io.Closer                  = (*Sink)(nil)
)

// NewSink returns a Sink writing to w with timestamps at precision prec
// and the other defaults of SinkConfig. Closing the Sink does not close
// w: whoever opened it closes it.
func NewSink(w io.Writer, prec particle.Precision) *Sink {
	cfg := SinkConfig{Precision: prec}
	cfg.setDefaults()
	return newSink(w, cfg)
}

// NewSinkConfig returns a Sink writing to w as cfg says. Closing the Sink
// does not close w.
func NewSinkConfig(w io.Writer, cfg SinkConfig) (*Sink, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newSink(w, cfg), nil
}

func newSink(w io.Writer, cfg SinkConfig) *Sink {
	return &Sink{cfg: cfg, w: w, held: make(map[operation.Emitter][]operation.Anchor)}
}

// OpenSink opens or creates the file at path and returns a Sink writing
// to it. Closing the Sink closes the file. The file is truncated unless
// cfg.Append; with cfg.Append, a torn last line is cut off. Both happen
// at the Sink's first write (or Close), not here, so that a Restore
// called first cuts the file at the checkpoint's length instead: a run
// restored from a checkpoint keeps the output the checkpoint covers.
//
// A path that is not a regular file (a named pipe, a device) is opened
// for writing alone, as a writer: its output is at least once.
func OpenSink(path string, cfg SinkConfig) (*Sink, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f, regular, created, err := openFile(path, cfg.Append)
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	s := newSink(f, cfg)
	s.file = f
	if regular {
		if s.path, err = filepath.Abs(path); err != nil {
			f.Close()
			return nil, fmt.Errorf("file: %w", err)
		}
		s.created = created
	}
	return s, nil
}

// openFile opens the file at path for a Sink. A regular file, or a new
// one, is opened for reading too (to find a torn line, to check a
// checkpoint's bytes) and appended to: its truncation waits for the first
// write. Anything else (a named pipe, a device) is opened as before
// checkpoints existed: for reading and appending with appending, else for
// writing alone and truncated; opening a named pipe for reading makes its
// open not wait for a reader.
func openFile(path string, appending bool) (f *os.File, regular, created bool, err error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if appending {
			flag = os.O_RDWR | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(path, flag, 0o644)
		return f, false, false, err
	}
	f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		created = true
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	}
	if err != nil {
		return nil, false, false, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, false, err
	}
	return f, fi.Mode().IsRegular(), created, nil
}

// prepare makes the file ready for its first write as the config says:
// truncated, or, with Append, its torn last line cut off. s.mu is held.
func (s *Sink) prepare() error {
	if s.ready || s.path == "" {
		s.ready = true
		return nil
	}
	if s.cfg.Append {
		if err := cutTornLine(s.file, s.cfg.Logger); err != nil {
			return err
		}
	} else if err := s.file.Truncate(0); err != nil {
		return err
	}
	s.ready = true
	return nil
}

// Process implements operation.Operation: it gathers the particle's line
// and holds the input until the line is written.
func (s *Sink) Process(_ context.Context, in particle.Particle, out operation.Emitter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSinkClosed
	}
	if s.broken != nil {
		return s.broken
	}
	if s.err != nil {
		if err := s.settle(out); err != nil {
			return err
		}
	}
	buf, err := particle.AppendLineProtocol(s.buf, &in, s.cfg.Precision)
	if err != nil {
		return err
	}
	s.buf = buf
	s.held[out] = append(s.held[out], out.Hold())
	if len(s.buf) >= s.cfg.BufferSize {
		// A failure is kept in s.err and reported by the next call; this
		// input is held and its line kept.
		_ = s.settle(out)
	}
	return nil
}

// OnWatermark implements operation.WatermarkHandler: it writes what was
// gathered and acknowledges the inputs held for it.
func (s *Sink) OnWatermark(_ context.Context, _ int64, out operation.Emitter) error {
	return s.lockedSettle(out)
}

// OnTick implements operation.TickHandler: it writes what was gathered and
// acknowledges the inputs held for it, so that output appears within a
// housekeeping interval however slowly event time moves.
func (s *Sink) OnTick(_ context.Context, _ int64, out operation.Emitter) error {
	return s.lockedSettle(out)
}

// Flush implements operation.Flusher: it writes what was gathered and
// acknowledges the inputs held for it.
func (s *Sink) Flush(_ context.Context, out operation.Emitter) error {
	return s.lockedSettle(out)
}

func (s *Sink) lockedSettle(out operation.Emitter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settle(out)
}

// settle writes the lines gathered, fsyncs them if asked, and then
// acknowledges the inputs held through out. On failure it keeps both and
// returns a *WriteError. s.mu is held.
func (s *Sink) settle(out operation.Emitter) error {
	if err := s.write(); err != nil {
		s.err = err
		return err
	}
	s.err = nil
	held := s.held[out]
	for _, a := range held {
		out.Ack(a)
	}
	s.written += uint64(len(held))
	s.held[out] = held[:0]
	return nil
}

// write hands the lines gathered to the writer and, with Fsync, syncs it,
// after preparing the file at the first call. A short write keeps the
// rest for the next try. s.mu is held.
func (s *Sink) write() error {
	if s.broken != nil {
		return s.broken
	}
	if !s.ready {
		if err := s.prepare(); err != nil {
			return s.writeError(err)
		}
	}
	if len(s.buf) > 0 {
		n, err := s.w.Write(s.buf)
		s.buf = s.buf[:copy(s.buf, s.buf[n:])]
		s.unsaved = s.unsaved || n > 0
		if err == nil && len(s.buf) > 0 {
			err = io.ErrShortWrite
		}
		if err != nil {
			return s.writeError(err)
		}
	}
	if s.cfg.Fsync && s.unsaved {
		syncer, ok := s.w.(interface{ Sync() error })
		if !ok {
			return s.writeError(errors.New("fsync asked of a writer without Sync"))
		}
		if err := syncer.Sync(); err != nil {
			return s.writeError(err)
		}
	}
	s.unsaved = false
	return nil
}

func (s *Sink) writeError(err error) *WriteError {
	e := &WriteError{Err: err}
	if s.file != nil {
		e.Path = s.file.Name()
		// The error names the file already.
		if pe, ok := err.(*fs.PathError); ok && pe.Path == e.Path {
			e.Err = pe.Err
		}
	}
	return e
}

// Written returns the number of particles whose lines were written, and
// whose inputs were acknowledged.
func (s *Sink) Written() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

// Close writes what is left and closes the file if OpenSink opened it; a
// writer given to NewSink stays open. Calls after the first do nothing,
// so that instances sharing the Sink may each close it. When what is left
// cannot be written, the *WriteError says how many lines that is; their
// inputs were never acknowledged.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	lines := bytes.Count(s.buf, []byte{'\n'})
	err := s.write()
	if we, ok := err.(*WriteError); ok {
		we.Unwritten = lines
	}
	if s.file != nil {
		if cerr := s.file.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("file: %w", cerr)
		}
	}
	return err
}
