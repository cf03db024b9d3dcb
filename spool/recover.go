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

// recover loads the segments in the directory. Damage is reported as a
// *CorruptError, or, with Config.Repair, cut out of the segments.
func (s *Spool) recover() error {
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
	)
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
		for _, seg := range s.segs {
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
	s.synced = s.next
	return nil
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
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("spool: repair: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, seg.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("spool: repair: %w", err)
	}
	seg.end = int64(len(b))
	return syncDir(filepath.Dir(seg.path))
}
