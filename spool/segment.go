package spool

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

const segmentExt = ".wal"

// segment is one file of the log. Its data records have the sequence
// numbers first, first+1, ..., first+count-1.
type segment struct {
	path    string
	first   uint64
	count   uint64
	live    []uint64 // bit i set: record first+i is not completed
	pending int      // number of bits set in live
	end     int64    // found by Open: bytes of frames, before any preallocated space
}

func segmentName(first uint64) string { return fmt.Sprintf("%020d%s", first, segmentExt) }

// parseSegmentName returns the first sequence number of a segment file.
func parseSegmentName(name string) (uint64, bool) {
	base, ok := strings.CutSuffix(filepath.Base(name), segmentExt)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(base, 10, 64)
	return n, err == nil
}

// add registers the next n records as live.
func (s *segment) add(n uint64) {
	for range n {
		i := s.count
		if i/64 >= uint64(len(s.live)) {
			s.live = append(s.live, 0)
		}
		s.live[i/64] |= 1 << (i % 64)
		s.count++
	}
	s.pending += int(n)
}

// addGap registers the next n sequence numbers as records that are gone.
func (s *segment) addGap(n uint64) {
	s.add(n)
	s.complete(s.first+s.count-n, n)
}

// complete clears the records of [start, start+n) that belong to s and
// returns how many were live.
func (s *segment) complete(start, n uint64) int {
	lo, hi := max(start, s.first), min(start+n, s.first+s.count)
	if n == 0 || start+n < start {
		hi = s.first + s.count // a run that overflows reaches to the end
	}
	done := 0
	for seq := lo; seq < hi; seq++ {
		i := seq - s.first
		w, m := i/64, uint64(1)<<(i%64)
		if s.live[w]&m != 0 {
			s.live[w] &^= m
			done++
		}
	}
	s.pending -= done
	return done
}

func (s *segment) isLive(seq uint64) bool {
	if seq < s.first || seq >= s.first+s.count {
		return false
	}
	i := seq - s.first
	return s.live[i/64]&(1<<(i%64)) != 0
}
