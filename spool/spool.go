package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// Spool is a write-ahead log in a directory. Its methods are safe for
// concurrent use. Writers that each Append a record and then Sync share
// fsyncs (group commit): a Sync writes every record appended before it
// started, so one that waited for another finds its record written or
// writes it together with those of the writers that came meanwhile.
type Spool struct {
	dir  string
	cfg  Config
	lock *os.File

	wmu   sync.Mutex // serializes Sync, Pending and Close: owns f, size, alloc, zeros and ends
	f     *os.File
	size  int64  // bytes of frames in f: where the next write goes
	alloc int64  // bytes of f written or zero-filled: writes below change no file size
	zeros []byte // a zero-filled buffer for preallocating
	ends  *endsFile
	old   []*segment // segments found by Open, for Pending

	mu     sync.Mutex // guards what follows
	closed bool
	failed error      // set by a Sync that failed to write: see fail
	segs   []*segment // oldest first; the last one is being written
	next   uint64     // sequence number of the next Append
	synced uint64     // records below this were written by a Sync
	buf    []byte     // frames appended and not yet written
	spare  []byte
	// marks are the records completed since the last Sync, as runs:
	// trees mostly complete in the order their records came, so that a
	// drain of a million records keeps a few runs, not a million numbers.
	marks   []run
	stats   Stats
	deletes []string // compacted segments waiting to be removed
	damage  []Damage // what Open repaired
}

// Stats describes a Spool.
type Stats struct {
	// Pending is the number of records appended, or found by Open, and
	// not completed.
	Pending int
	// Recovered is the number of records Open found not completed.
	Recovered int
	// Segments is the number of segment files.
	Segments int
	// Appended, Completed, Syncs and Bytes count what this Spool did:
	// records appended and completed, Syncs that wrote, bytes written.
	Appended, Completed, Syncs uint64
	Bytes                      int64
	// Truncated is the number of bytes of a torn last write Open cut
	// off: written by a Sync that never returned, so never acknowledged.
	Truncated int64
	// Lost is the number of records, not completed, that Open found
	// damaged and cut out (Config.Repair).
	Lost uint64
}

// Open opens the spool in dir, creating the directory if needed, and
// recovers what a previous Spool left there: Pending hands out its
// records that were not completed.
func Open(dir string, cfg Config) (*Spool, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if err := lockFile(lock); err != nil {
		lock.Close()
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("spool: lock %s: %w", dir, err)
	}
	e, gen, found, err := readEnds(dir)
	if errors.Is(err, errEnds) && cfg.Repair {
		cfg.Logger.Error("spool: ENDS unreadable: the ends of the log were not checked", "dir", dir, "err", err)
	} else if err != nil {
		lock.Close()
		return nil, &CorruptError{Damage: []Damage{{Path: filepath.Join(dir, endsName), Err: err}}}
	}
	s := &Spool{dir: dir, cfg: cfg, lock: lock, next: 1}
	if err := s.recover(e, found); err != nil {
		lock.Close()
		return nil, err
	}
	if err := s.openTail(); err != nil {
		lock.Close()
		return nil, err
	}
	if s.ends, err = openEnds(dir, found, gen, s.currentEnds()); err != nil {
		s.f.Close()
		lock.Close()
		return nil, err
	}
	s.compact()
	s.removeCompacted()
	return s, nil
}

// currentEnds returns the ends of the log as they are once the last Sync
// returned.
func (s *Spool) currentEnds() ends {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ends{first: s.segs[0].first, durable: s.synced}
}

// openTail makes the newest segment the one written if it holds no record
// yet (it may hold marks, which must stay), or else starts a new one.
func (s *Spool) openTail() error {
	if n := len(s.segs); n > 0 && s.segs[n-1].count == 0 {
		last := s.segs[n-1]
		f, err := os.OpenFile(last.path, os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("spool: %w", err)
		}
		s.f, s.size, s.alloc = f, last.end, info.Size()
		return nil
	}
	return s.startSegment(s.next)
}

// startSegment creates the segment whose first record will be first and
// makes it the one written. The writer lock is held, or s is not shared
// yet.
func (s *Spool) startSegment(first uint64) error {
	path := filepath.Join(s.dir, segmentName(first))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if err := syncDir(s.dir); err != nil {
		f.Close()
		return err
	}
	if s.f != nil {
		if err := s.f.Close(); err != nil {
			f.Close()
			return fmt.Errorf("spool: %w", err)
		}
	}
	s.f, s.size, s.alloc = f, 0, 0
	s.mu.Lock()
	s.segs = append(s.segs, &segment{path: path, first: first})
	s.mu.Unlock()
	return nil
}

// Append adds a record and returns its sequence number. The record is
// durable once a later Sync returns nil. data is copied.
func (s *Spool) Append(data []byte) (uint64, error) {
	if len(data) > MaxRecordSize {
		return 0, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(data))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	if s.failed != nil {
		return 0, s.failed
	}
	seq := s.next
	s.next++
	s.buf = appendData(s.buf, seq, data)
	s.stats.Appended++
	return seq, nil
}

// Sync writes the records appended and the completions marked since the
// last Sync with one write, and fsyncs it. When it returns nil, every
// record appended before it was called is durable; Durable tells up to
// where. It also deletes segments that hold only completed records.
//
// If it fails to write (a full disk, an I/O error), what it wrote is in
// doubt: it returns an error wrapping ErrFailed and the cause, and so do
// every Append and Sync after it, so that no later Sync acknowledges
// records written after a hole. The next Open cuts what the failed Sync
// left off as a torn last write, or hands out its records if they reached
// the disk whole.
func (s *Spool) Sync() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.sync()
}

func (s *Spool) sync() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.failed != nil {
		s.mu.Unlock()
		return s.failed
	}
	upto := s.next
	from := s.synced
	b := s.buf
	if len(b) > 0 || len(s.marks) > 0 {
		b = appendCommit(b, upto, s.marks)
	}
	s.buf, s.spare = s.spare[:0], nil
	s.marks = s.marks[:0]
	s.mu.Unlock()

	if len(b) > 0 {
		if err := s.write(b); err != nil {
			return s.fail(err)
		}
	}

	s.mu.Lock()
	active := s.segs[len(s.segs)-1]
	active.add(upto - from)
	// A segment is named by its first record, so one without records
	// cannot be followed by another.
	rotate := s.size >= s.cfg.SegmentSize && active.count > 0
	s.synced = upto
	if len(b) > 0 {
		s.stats.Syncs++
		s.stats.Bytes += int64(len(b))
	}
	s.spare = b[:0]
	s.mu.Unlock()

	// Flushed before a new segment exists, so that after a crash ENDS
	// says the newest segment holds records if it does.
	if err := s.ends.store(s.currentEnds(), rotate); err != nil {
		return s.fail(err)
	}
	if rotate {
		if err := s.startSegment(upto); err != nil {
			return s.fail(err)
		}
	}
	s.compact()
	return s.removeCompacted()
}

// write writes b at the end of the active segment's frames and flushes
// it. The writer lock is held.
func (s *Spool) write(b []byte) error {
	if _, err := s.f.WriteAt(b, s.size); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	end := s.size + int64(len(b))
	if err := s.preallocate(end); err != nil {
		return err
	}
	if err := datasync(s.f); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	s.size = end
	return nil
}

// fail makes err, wrapped in ErrFailed, the result of every later Append
// and Sync: after a failed write the bytes past the last commit are in
// doubt, and the records of the failed Sync are no longer buffered, so a
// later Sync would write its records after a hole and acknowledge them.
func (s *Spool) fail(err error) error {
	err = fmt.Errorf("%w: %w", ErrFailed, err)
	s.mu.Lock()
	s.failed = err
	s.mu.Unlock()
	return err
}

// preallocate zero-fills the active segment up to Config.Preallocate
// bytes past end once less than half of that is left, so that the next
// Syncs write within the file. The fsync that follows makes the new size
// durable with the frames. The writer lock is held.
func (s *Spool) preallocate(end int64) error {
	want := s.cfg.Preallocate
	if want <= 0 || s.alloc-end >= want/2 {
		return nil
	}
	if s.zeros == nil {
		s.zeros = make([]byte, min(want, 64<<10))
	}
	from := max(s.alloc, end)
	for off := from; off < end+want; off += int64(len(s.zeros)) {
		if _, err := s.f.WriteAt(s.zeros[:min(int64(len(s.zeros)), end+want-off)], off); err != nil {
			return fmt.Errorf("preallocate: %w", err)
		}
	}
	s.alloc = end + want
	return nil
}

// Durable returns the sequence number below which every record is durable.
func (s *Spool) Durable() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

// Complete marks the record seq as processed: it is not handed out by a
// later Open's Pending once the mark is written by the next Sync. It
// reports whether seq was a durable record not completed yet; completing a
// record twice, or one not yet synced, does nothing.
func (s *Spool) Complete(seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.complete(seq)
}

// CompleteAll is Complete of each of seqs under one lock, for a caller
// that learns of many completions at once. It returns how many were
// durable records not completed yet.
func (s *Spool) CompleteAll(seqs []uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, seq := range seqs {
		if s.complete(seq) {
			n++
		}
	}
	return n
}

// complete is Complete with s.mu held.
func (s *Spool) complete(seq uint64) bool {
	i, ok := slices.BinarySearchFunc(s.segs, seq, func(g *segment, seq uint64) int {
		switch {
		case seq < g.first:
			return 1
		case seq >= g.first+g.count:
			return -1
		}
		return 0
	})
	if !ok || s.segs[i].complete(seq, 1) == 0 {
		return false
	}
	if n := len(s.marks); n > 0 && s.marks[n-1].start+s.marks[n-1].n == seq {
		s.marks[n-1].n++
	} else {
		s.marks = append(s.marks, run{start: seq, n: 1})
	}
	s.stats.Completed++
	return true
}

// compact queues for deletion the oldest segments while they hold only
// completed records, keeping the one being written.
func (s *Spool) compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.segs) > 1 && s.segs[0].pending == 0 {
		s.deletes = append(s.deletes, s.segs[0].path)
		s.segs = s.segs[1:]
	}
}

// removeCompacted deletes the files compact queued, once ENDS says that
// the log starts after them. The writer lock is held.
func (s *Spool) removeCompacted() error {
	s.mu.Lock()
	paths := s.deletes
	s.deletes = nil
	s.mu.Unlock()
	if len(paths) == 0 {
		return nil
	}
	if err := s.ends.store(s.currentEnds(), true); err != nil {
		return fmt.Errorf("spool: compact: %w", err)
	}
	var errs []error
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("spool: compact: %w", err)
	}
	return nil
}

// Pending calls fn, in sequence order, for every record that Open found
// not completed and that is still not completed, until fn returns an
// error, which Pending returns. data is valid only during the call.
func (s *Spool) Pending(fn func(seq uint64, data []byte) error) error {
	s.wmu.Lock()
	old := s.old
	s.wmu.Unlock()
	for _, seg := range old {
		if !s.hasLive(seg) {
			continue
		}
		data, err := os.ReadFile(seg.path)
		if errors.Is(err, os.ErrNotExist) {
			continue // compacted meanwhile: nothing left in it
		}
		if err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		for off := 0; off < len(data) && !preallocated(data[off:]); {
			f, n, err := nextFrame(data[off:])
			if err != nil {
				return &CorruptError{Damage: []Damage{{Path: seg.path, Offset: int64(off), Err: err}}}
			}
			off += n
			if f.kind != kindData {
				continue
			}
			s.mu.Lock()
			live := seg.isLive(f.seq)
			s.mu.Unlock()
			if !live {
				continue
			}
			if err := fn(f.seq, f.data); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Spool) hasLive(seg *segment) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return seg.pending > 0
}

// Damage returns the damaged stretches that Open cut out of the segments
// (Config.Repair), oldest first.
func (s *Spool) Damage() []Damage { return slices.Clone(s.damage) }

// Stats returns the spool's figures.
func (s *Spool) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Segments = len(s.segs)
	for _, seg := range s.segs {
		st.Pending += seg.pending
	}
	return st
}

// Close syncs what is buffered and closes the spool. If every record was
// completed, it leaves the directory without segments. After a failed
// Sync it writes nothing and returns that Sync's error. Calls after the
// first return ErrClosed.
func (s *Spool) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	err := s.sync()
	if errors.Is(err, ErrClosed) {
		return err
	}
	e := s.currentEnds()
	s.mu.Lock()
	s.closed = true
	empty := true
	for _, seg := range s.segs {
		if seg.pending > 0 {
			empty = false
		}
	}
	segs := s.segs
	s.segs = nil
	s.mu.Unlock()
	errs := []error{err, s.f.Close()}
	if empty {
		e.first = e.durable // the segments go: the log starts where the next record will
	}
	if err == nil {
		err = s.ends.store(e, true)
		errs = append(errs, err)
	}
	errs = append(errs, s.ends.f.Close())
	if empty && err == nil {
		for _, seg := range segs {
			if rerr := os.Remove(seg.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				errs = append(errs, rerr)
			}
		}
	}
	errs = append(errs, s.lock.Close())
	return errors.Join(errs...)
}
