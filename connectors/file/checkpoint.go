package file

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/state"
)

// sinkStateVersion is the version of the form [Sink.Snapshot] writes.
const sinkStateVersion = 1

// tailBytes is how many bytes before a checkpoint's length it checksums,
// so that a restore recognizes the file it was taken of.
const tailBytes = 4 << 10

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrNotRestorable is wrapped by the error of [Sink.Restore] when the file
// no longer holds what the checkpoint recorded: it is missing, shorter
// than the checkpoint's length, or its bytes before that length are not
// those the Sink wrote. The output that checkpoint covers is lost, so the
// checkpoint cannot be restored; a run may start over instead.
var ErrNotRestorable = errors.New("file: the checkpoint's output is not in the file")

// Snapshot implements operation.Snapshotter: it writes the lines gathered
// so far, fsyncs the file whatever SinkConfig.Fsync says, and records the
// file's path and length, with a checksum of the bytes just before the
// length. Its inputs are acknowledged by the next call that settles them
// (a tick, the watermark, the end of the stream), as usual.
//
// A Sink on a writer (NewSink, or OpenSink of a pipe or a device) records
// only that: it is written at least once, and what it wrote after the
// checkpoint is written again after a restore.
//
// A Sink used by more than one bolt instance (given an input or a tick by
// each) refuses: each instance takes its snapshot at its own point, so no
// one length of the file separates what the checkpoint covers from what
// it does not. Give its bolt one instance (the default).
func (s *Sink) Snapshot(w *state.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSinkClosed
	}
	if err := s.write(); err != nil {
		s.err = err
		return err
	}
	w.PutUvarint(sinkStateVersion)
	if s.path == "" {
		if syncer, ok := s.w.(interface{ Sync() error }); ok && s.cfg.Fsync {
			if err := syncer.Sync(); err != nil {
				return s.writeError(err)
			}
		}
		w.PutBool(false)
		return nil
	}
	if n := s.writers(); n > 1 {
		return fmt.Errorf("file: checkpoint of %s: used by %d bolt instances, which take their snapshots at different points of it; give the sink's bolt one instance", s.path, n)
	}
	if err := s.file.Sync(); err != nil {
		return s.writeError(err)
	}
	s.unsaved = false
	fi, err := s.file.Stat()
	if err != nil {
		return s.writeError(err)
	}
	size := fi.Size()
	sum, err := s.tailSum(size)
	if err != nil {
		return s.writeError(err)
	}
	w.PutBool(true)
	w.PutString(s.path)
	w.PutUvarint(uint64(size))
	w.PutUvarint(uint64(sum))
	return nil
}

// writers returns how many bolt instances gave the Sink an input or a
// tick. s.mu is held.
func (s *Sink) writers() int { return len(s.held) }

// tailSum returns the CRC-32C of the last tailBytes bytes (fewer in a
// smaller file) before offset size of the file.
func (s *Sink) tailSum(size int64) (uint32, error) {
	start := max(size-tailBytes, 0)
	b := make([]byte, size-start)
	if _, err := s.file.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	return crc32.Checksum(b, castagnoli), nil
}

// Restore implements operation.Snapshotter: it cuts the file at the
// length the checkpoint recorded, dropping what was written after it
// (whole lines, or one torn by the crash), and the Sink then appends
// after it, whether or not SinkConfig.Append is set: the file is the
// checkpoint's, continued.
//
// It refuses a checkpoint of another file (another path, or a Sink on a
// writer against one on a file: an error wrapping
// operation.ErrStateMismatch) and a file missing, shorter than recorded
// or holding other bytes before that length (ErrNotRestorable), naming the
// file. It must come before anything is written.
func (s *Sink) Restore(r *state.Reader) (err error) {
	defer func() {
		if err != nil {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.failRestore(err)
		}
	}()
	operation.CheckVersion(r, "file sink", sinkStateVersion)
	onFile := r.ReadBool()
	var (
		path      string
		size, sum uint64
	)
	if onFile {
		path, size, sum = r.ReadString(), r.ReadUvarint(), r.ReadUvarint()
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("file: restore the sink: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.Adopt && !s.closed {
		if s.ready {
			// The file holds what this Sink wrote: no longer new.
			s.created = false
		}
		s.buf, s.held, s.ready = s.buf[:0], map[operation.Emitter][]operation.Anchor{}, false
		if onFile && s.path != "" && path != s.path {
			if !s.adopt(path, size, sum) {
				return nil
			}
		}
	}
	switch {
	case s.closed:
		return ErrSinkClosed
	case s.ready && s.path != "" || len(s.buf) > 0:
		return fmt.Errorf("file: restore %s: the sink has written already", s.name())
	case !onFile && s.path == "":
		s.ready = true
		return nil
	case !onFile:
		return fmt.Errorf("file: restore %s: %w: the checkpoint is of a sink on a writer (standard output, a pipe), not of a file", s.path, operation.ErrStateMismatch)
	case s.path == "":
		return fmt.Errorf("file: restore %s: %w: the checkpoint is of the file %s", s.name(), operation.ErrStateMismatch, path)
	case path != s.path:
		return fmt.Errorf("file: restore %s: %w: the checkpoint is of the file %s", s.path, operation.ErrStateMismatch, path)
	}
	fi, err := s.file.Stat()
	if err != nil {
		return fmt.Errorf("file: restore: %w", err)
	}
	have := fi.Size()
	switch {
	case s.created && size > 0:
		return fmt.Errorf("file: restore %s: %w: the file was missing; the checkpoint recorded %d bytes", s.path, ErrNotRestorable, size)
	case uint64(have) < size:
		return fmt.Errorf("file: restore %s: %w: the file has %d bytes, the checkpoint recorded %d", s.path, ErrNotRestorable, have, size)
	}
	got, err := s.tailSum(int64(size))
	if err != nil {
		return fmt.Errorf("file: restore %s: %w", s.path, err)
	}
	if uint64(got) != sum {
		return fmt.Errorf("file: restore %s: %w: its bytes before offset %d are not those the checkpoint recorded (another file at the same path?)", s.path, ErrNotRestorable, size)
	}
	if uint64(have) > size {
		if err := s.file.Truncate(int64(size)); err != nil {
			return fmt.Errorf("file: restore: %w", err)
		}
		if err := s.file.Sync(); err != nil {
			return fmt.Errorf("file: restore: %w", err)
		}
		s.cfg.Logger.Info("file: restored to a checkpoint: cut off what was written after it, to write it again",
			"file", s.path, "offset", size, "bytes", uint64(have)-size)
	}
	s.ready = true
	return nil
}

// adopt makes the Sink write the file at path, which a checkpoint
// recorded with size bytes whose tail sums to sum, in place of its own,
// and reports whether it did; when that file is missing or holds other
// bytes, the Sink keeps its own file. s.mu is held.
func (s *Sink) adopt(path string, size, sum uint64) bool {
	keep := func(why string, err error) bool {
		s.cfg.Logger.Warn("file: restored a checkpoint of another file, which it cannot continue: writing its own, where lines after the checkpoint may repeat what the other holds",
			"file", s.path, "checkpoint_file", path, "why", why, "err", err)
		return false
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return keep("cannot open it", err)
	}
	other := &Sink{file: f}
	fi, err := f.Stat()
	if err == nil && uint64(fi.Size()) < size {
		err = fmt.Errorf("%w: it has %d bytes, the checkpoint recorded %d", ErrNotRestorable, fi.Size(), size)
	}
	if err == nil {
		var got uint32
		if got, err = other.tailSum(int64(size)); err == nil && uint64(got) != sum {
			err = fmt.Errorf("%w: its bytes before offset %d are not those the checkpoint recorded", ErrNotRestorable, size)
		}
	}
	if err != nil {
		f.Close()
		return keep("it does not hold the checkpoint's bytes", err)
	}
	own, ownPath, created := s.file, s.path, s.created
	if err := own.Close(); err != nil {
		s.cfg.Logger.Warn("file: closing the file given up for the checkpoint's", "file", ownPath, "err", err)
	}
	if fi, err := os.Stat(ownPath); created && err == nil && fi.Size() == 0 {
		os.Remove(ownPath)
	}
	s.file, s.w, s.path, s.created = f, f, path, false
	s.cfg.Logger.Info("file: restored a checkpoint of another file: writing that file from the checkpoint on", "file", path, "instead_of", ownPath)
	return true
}

// failRestore leaves the Sink unusable after a refused restore: every
// later call fails with err, and the file is left as it is, neither
// truncated nor written. s.mu is held.
func (s *Sink) failRestore(err error) {
	if s.broken == nil {
		s.broken = err
	}
	s.ready = true
}

// name names the Sink's destination in an error.
func (s *Sink) name() string {
	switch {
	case s.path != "":
		return s.path
	case s.file != nil:
		return s.file.Name()
	}
	return "sink on a writer"
}
