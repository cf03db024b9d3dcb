package spool

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// item is a piece of a segment as Open reads it: an intact frame, or a
// damaged stretch [off, end) (err set) that n records, numbered from on,
// were in.
type item struct {
	off, end int
	f        frame
	err      error
	from, n  uint64
}

// segmentRead is what reading one segment found.
type segmentRead struct {
	items []item
	// end is where the frames end, before preallocated zeros; commit
	// where the last commit frame whose Sync wrote intact bytes ends.
	end, commit int
}

// maxGap bounds the records a segment may be missing in one stretch: a
// larger gap is no damage to a spool's frames but a frame or a file name
// from elsewhere (it would also cost a bit per record).
const maxGap = 1 << 26

// readSegment splits the segment data, whose first record is first, into
// intact frames and damaged stretches. Records are numbered without holes
// within a segment and, when limit is not zero, end before limit, the
// first record of the next segment; a frame that breaks the numbering is
// damage, a hole is a stretch of the records missing.
func readSegment(data []byte, first, limit uint64) (segmentRead, error) {
	var r segmentRead
	expect := first
	damagedTo := -1 // where the last damaged stretch ends
	// damage marks [off, the next intact frame) damaged, joined to a
	// stretch that ends at off.
	damage := func(off int, err error) int {
		end := resync(data, off+1)
		damagedTo = end
		if n := len(r.items); n > 0 && r.items[n-1].err != nil && r.items[n-1].end == off {
			r.items[n-1].end = end
		} else {
			r.items = append(r.items, item{off: off, end: end, err: err, from: expect})
		}
		return end
	}
	// skip accounts records up to next missing before off.
	skip := func(off int, next uint64) {
		if next == expect {
			return
		}
		if n := len(r.items); n > 0 && r.items[n-1].err != nil && r.items[n-1].end == off {
			r.items[n-1].n = next - expect
		} else {
			r.items = append(r.items, item{off: off, end: off, err: errMissing, from: expect, n: next - expect})
			damagedTo = off
		}
		expect = next
	}
	off := 0
	for off < len(data) && !preallocated(data[off:]) {
		f, n, err := nextFrame(data[off:])
		if err == nil {
			err = checkSequence(f, expect, limit)
		}
		if err != nil {
			off = damage(off, err)
			continue
		}
		switch f.kind {
		case kindData:
			skip(off, f.seq)
			expect++
		case kindCommit:
			skip(off, f.seq)
			if f.batch <= uint64(off) && damagedTo <= off-int(f.batch) {
				r.commit = off + n
			}
		case kindGap:
			expect += f.seq
		}
		r.items = append(r.items, item{off: off, end: off + n, f: f})
		off += n
	}
	r.end = off
	if limit > expect {
		if limit-expect > maxGap {
			return r, fmt.Errorf("%w: the next segment starts %d records after this one's last", errSequence, limit-expect)
		}
		skip(len(data), limit)
	}
	return r, nil
}

// checkSequence reports a frame that cannot follow a frame after which
// the record numbered expect is next.
func checkSequence(f frame, expect, limit uint64) error {
	var next uint64
	switch f.kind {
	case kindData:
		next = f.seq + 1
		if f.seq < expect {
			return fmt.Errorf("%w: record %d, want %d", errSequence, f.seq, expect)
		}
	case kindCommit:
		next = f.seq
		if f.seq < expect {
			return fmt.Errorf("%w: commit up to %d, want %d", errSequence, f.seq, expect)
		}
	case kindGap:
		next = expect + f.seq
	}
	switch {
	case next < expect || next-expect > maxGap:
		return fmt.Errorf("%w: record %d, want %d", errSequence, next-1, expect)
	case limit > 0 && next > limit:
		return fmt.Errorf("%w: record %d beyond the next segment's first, %d", errSequence, next-1, limit)
	}
	return nil
}

// recover loads the segments in the directory and checks them against
// the ends that ENDS recorded, if found. Damage is reported as a
// *CorruptError, or, with Config.Repair, cut out of the segments.
func (s *Spool) recover(e ends, found bool) error {
	names, err := filepath.Glob(filepath.Join(s.dir, "*"+segmentExt))
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	var firsts []uint64
	for _, n := range names {
		if first, ok := parseSegmentName(n); ok {
			firsts = append(firsts, first)
		}
	}
	slices.Sort(firsts)
	type markRun struct{ start, n uint64 }
	type gap struct {
		seg     *segment
		from, n uint64
	}
	var (
		marks   []markRun
		gaps    []gap
		damage  []Damage
		repairs []func() error
		head    []*segment // the records missing before the oldest segment
	)
	oldest := e.durable
	if len(firsts) > 0 {
		oldest = firsts[0]
	}
	if found && oldest > e.first {
		if oldest-e.first > maxGap {
			return &CorruptError{Damage: []Damage{{Path: filepath.Join(s.dir, endsName), Err: fmt.Errorf("%w: %d records before %d", errHeadMissing, oldest-e.first, oldest)}}}
		}
		seg := &segment{path: filepath.Join(s.dir, segmentName(e.first)), first: e.first}
		seg.add(oldest - e.first)
		head = append(head, seg)
		damage = append(damage, Damage{Path: seg.path, Err: fmt.Errorf("%w: records %d to %d", errHeadMissing, e.first, oldest-1)})
		gaps = append(gaps, gap{seg, e.first, oldest - e.first})
	}
	for i, first := range firsts {
		seg := &segment{path: filepath.Join(s.dir, segmentName(first)), first: first}
		data, err := os.ReadFile(seg.path)
		if err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		var limit uint64
		newest := i == len(firsts)-1
		if !newest {
			limit = firsts[i+1]
		}
		r, err := readSegment(data, first, limit)
		if err != nil {
			return &CorruptError{Damage: []Damage{{Path: seg.path, Offset: int64(len(data)), Err: err}}}
		}
		torn := false
		if newest {
			// Damage after the last intact commit is the torn last write:
			// its Sync never returned, nothing in it was acknowledged.
			for j, it := range r.items {
				if it.err != nil && it.off >= r.commit {
					torn, r.end, r.items = true, it.off, r.items[:j]
					s.stats.Truncated = int64(len(data) - it.off)
					break
				}
			}
		}
		if end := first + recordsIn(r.items); newest && found && e.durable > end {
			if e.durable-end > maxGap {
				return &CorruptError{Damage: []Damage{{Path: seg.path, Offset: int64(r.end), Err: fmt.Errorf("%w: %d records", errTailCut, e.durable-end)}}}
			}
			// Not a torn last write: the cut goes below what was acknowledged.
			r.items = append(r.items, item{off: r.end, end: r.end + int(s.stats.Truncated), from: end, n: e.durable - end,
				err: fmt.Errorf("%w: the log ends before record %d, records up to %d were acknowledged", errTailCut, end, e.durable-1)})
			s.stats.Truncated = 0
		}
		damaged := false
		for _, it := range r.items {
			switch {
			case it.err != nil:
				damaged = true
				damage = append(damage, Damage{Path: seg.path, Offset: int64(it.off), Length: int64(it.end - it.off), Err: it.err})
				gaps = append(gaps, gap{seg, it.from, it.n})
				seg.add(it.n) // live until the marks say otherwise
			case it.f.kind == kindData:
				seg.add(1)
			case it.f.kind == kindCommit:
				// Marks were checked by nextFrame.
				_ = eachMark(it.f.data, func(start, n uint64) { marks = append(marks, markRun{start, n}) })
			case it.f.kind == kindGap:
				seg.addGap(it.f.seq)
			}
		}
		seg.end = int64(r.end)
		switch {
		case damaged:
			// The rewrite leaves a torn tail out too.
			repairs = append(repairs, func() error { return repairSegment(seg, data, r.items) })
		case torn:
			repairs = append(repairs, func() error { return truncate(seg.path, seg.end) })
		}
		s.segs = append(s.segs, seg)
		s.next = max(s.next, first+seg.count)
	}
	for _, m := range marks {
		for _, seg := range slices.Concat(head, s.segs) {
			seg.complete(m.start, m.n)
		}
	}
	for i, g := range gaps {
		if g.n > 0 {
			damage[i].Lost = uint64(g.seg.complete(g.from, g.n))
			s.stats.Lost += damage[i].Lost
		}
	}
	if len(damage) > 0 && !s.cfg.Repair {
		return &CorruptError{Damage: damage, Lost: s.stats.Lost}
	}
	for _, repair := range repairs {
		if err := repair(); err != nil {
			return err
		}
	}
	if s.stats.Truncated > 0 {
		s.cfg.Logger.Info("spool: cut off the torn last write, which no Sync acknowledged (the process was killed during a Sync, or the disk was full)",
			"segment", s.segs[len(s.segs)-1].path, "bytes", s.stats.Truncated)
	}
	for _, d := range damage {
		s.cfg.Logger.Error("spool: repaired damaged segment", "segment", d.Path, "offset", d.Offset, "length", d.Length, "lost", d.Lost, "err", d.Err)
	}
	s.damage = damage
	for _, seg := range s.segs {
		s.stats.Recovered += seg.pending
	}
	s.old = slices.Clone(s.segs)
	if found {
		// Numbers a lost record had are not given again: marks may name them.
		s.next = max(s.next, e.durable)
	} else if len(s.segs) > 0 {
		s.cfg.Logger.Warn("spool: no ENDS file: the ends of the log were not checked (a spool written before ENDS was, or ENDS deleted)", "dir", s.dir)
	}
	s.synced = s.next
	return s.flushNewest()
}

// flushNewest flushes the newest segment, whose last write Open takes as
// durable (and ENDS will say so) though its Sync may not have returned.
func (s *Spool) flushNewest() error {
	if len(s.segs) == 0 {
		return nil
	}
	f, err := os.OpenFile(s.segs[len(s.segs)-1].path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	err = datasync(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("spool: flush: %w", err)
	}
	return nil
}

// recordsIn returns how many sequence numbers items span.
func recordsIn(items []item) uint64 {
	var n uint64
	for _, it := range items {
		switch {
		case it.err != nil:
			n += it.n
		case it.f.kind == kindData:
			n++
		case it.f.kind == kindGap:
			n += it.f.seq
		}
	}
	return n
}

func truncate(path string, size int64) error {
	if err := os.Truncate(path, size); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}

// repairSegment rewrites seg, read as data and split into items, with its
// intact frames and a gap frame for the records of each damaged stretch,
// so that a later Open finds no damage and the same sequence numbers.
func repairSegment(seg *segment, data []byte, items []item) error {
	var b []byte
	for _, it := range items {
		switch {
		case it.err == nil:
			b = append(b, data[it.off:it.end]...)
		case it.n > 0:
			b = appendGap(b, it.n)
		}
	}
	tmp := seg.path + ".repair"
	if err := writeSynced(tmp, b); err != nil {
		return fmt.Errorf("%w (repair)", err)
	}
	if err := os.Rename(tmp, seg.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("spool: repair: %w", err)
	}
	seg.end = int64(len(b))
	return syncDir(filepath.Dir(seg.path))
}
