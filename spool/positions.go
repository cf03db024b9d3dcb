package spool

import (
	"errors"
	"fmt"
	"sync"

	"github.com/sensorstorm/sensorstorm/state"
)

// Position is a place in a spool's records, as a checkpoint records it:
// the record Seq, of which the first K particles were emitted before. The
// zero Position is before every record (sequences start at 1).
type Position struct {
	Seq, K uint64
}

// MarshalBinary encodes p. It never fails.
func (p Position) MarshalBinary() ([]byte, error) {
	w := state.NewWriter(nil)
	w.PutUvarint(p.Seq)
	w.PutUvarint(p.K)
	return w.Bytes(), nil
}

// UnmarshalBinary decodes a position MarshalBinary encoded.
func (p *Position) UnmarshalBinary(b []byte) error {
	r := state.NewReader(b)
	*p = Position{Seq: r.ReadUvarint(), K: r.ReadUvarint()}
	if err := r.Err(); err != nil {
		return fmt.Errorf("spool: position: %w", err)
	}
	return nil
}

// Positions follows where a source that reads its records from a spool
// stands, for the checkpoints of its run (topology.Positioner): which
// record the n-th particle the source emitted came from, and which records
// a complete checkpoint covers, so that they leave the spool whatever
// their trees did. Its methods are safe for concurrent use, but Next is
// for one goroutine, the one that emits.
//
// The source tells it each record it hands to the pipeline, in spool
// order (Hand), and calls Next before each particle of a record: Next
// says whether a restored run must leave the particle out, having emitted
// it before its checkpoint. At a checkpoint, At maps the engine's count of
// particles emitted to a Position; once the checkpoint is complete,
// Covered gives back the records before it.
type Positions struct {
	mu sync.Mutex
	// starts are the records whose particles began, oldest first, with
	// the count of particles emitted before their first.
	starts []recordStart
	// handed are the records handed to the pipeline, in order, that no
	// complete checkpoint covers yet.
	handed []uint64
	// count is the particles emitted so far in this run; Next's.
	count uint64
	// resume is where a restored run starts.
	resume Position
}

type recordStart struct {
	seq uint64
	// start is negative for the record resumed from: its particles left
	// out count as emitted before this run's first.
	start int64
}

// Resume makes p start where a restored run starts: the records before
// pos are covered, and the first pos.K particles of its record are left
// out. It is called before the first Hand.
func (p *Positions) Resume(pos Position) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resume = pos
}

// Resumed returns the position given to Resume, the zero Position if
// none.
func (p *Positions) Resumed() Position {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resume
}

// Hand notes that the record seq was handed to the pipeline. Records are
// handed in spool order.
func (p *Positions) Hand(seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.handed = append(p.handed, seq)
}

// Next is called before the k-th particle (counting from 0) of the record
// seq. It reports whether the particle was emitted before the checkpoint
// the run resumed from, and is to be left out; otherwise the particle
// counts as emitted (a source whose emit then fails stops: the engine's
// count, which At reads, leaves that particle out).
func (p *Positions) Next(seq, k uint64) (skip bool) {
	resumed := seq == p.resume.Seq && p.resume.Seq != 0
	if k == 0 {
		start := int64(p.count)
		if resumed {
			start -= int64(p.resume.K)
		}
		p.mu.Lock()
		p.starts = append(p.starts, recordStart{seq: seq, start: start})
		p.mu.Unlock()
	}
	if resumed && k < p.resume.K {
		return true
	}
	p.count++
	return false
}

// At returns the position of the run's particle number emitted (counting
// from 0, the engine's count of those emitted before it): the record it
// came from, and how many particles of that record came before it. Before
// any particle of this run began, it is the position resumed from.
func (p *Positions) At(emitted uint64) Position {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.starts) - 1; i >= 0; i-- {
		if st := p.starts[i]; st.start <= int64(emitted) {
			return Position{Seq: st.seq, K: uint64(int64(emitted) - st.start)}
		}
	}
	return p.resume
}

// Covered forgets the records handed before pos, which a complete
// checkpoint at pos covers, and returns them: the source completes them
// in its spool.
func (p *Positions) Covered(pos Position) []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(p.handed) && p.handed[n] < pos.Seq {
		n++
	}
	done := append([]uint64(nil), p.handed[:n]...)
	p.handed = append(p.handed[:0], p.handed[n:]...)
	i := 0
	for i+1 < len(p.starts) && p.starts[i+1].seq <= pos.Seq {
		i++
	}
	p.starts = append(p.starts[:0], p.starts[i:]...)
	return done
}

// errPast stops CompleteBefore's walk.
var errPast = errors.New("past the position")

// CompleteBefore completes the records Open found not completed whose
// sequence is before seq, as a restored run does with the records its
// checkpoint covers, and returns how many it completed.
func (s *Spool) CompleteBefore(seq uint64) (int, error) {
	var covered []uint64
	err := s.Pending(func(pending uint64, _ []byte) error {
		if pending >= seq {
			return errPast
		}
		covered = append(covered, pending)
		return nil
	})
	if err != nil && !errors.Is(err, errPast) {
		return 0, fmt.Errorf("spool: complete before %d: %w", seq, err)
	}
	for _, c := range covered {
		s.Complete(c)
	}
	return len(covered), nil
}

// Commit completes in sp the records that a complete checkpoint at pos,
// as At encoded it, covers, and returns how many it completed. A position
// it cannot decode covers nothing.
func (p *Positions) Commit(sp *Spool, pos []byte) int {
	var at Position
	if at.UnmarshalBinary(pos) != nil {
		return 0
	}
	done := p.Covered(at)
	for _, seq := range done {
		sp.Complete(seq)
	}
	return len(done)
}

// ResumeAt makes p start at pos, as At encoded it (see Resume).
func (p *Positions) ResumeAt(pos []byte) error {
	var at Position
	if err := at.UnmarshalBinary(pos); err != nil {
		return err
	}
	p.Resume(at)
	return nil
}

// CompleteCovered completes in sp the records before the position resumed
// from, whose effect the restored checkpoint holds, and returns how many.
func (p *Positions) CompleteCovered(sp *Spool) (int, error) {
	if at := p.Resumed(); at.Seq != 0 {
		return sp.CompleteBefore(at.Seq)
	}
	return 0, nil
}
