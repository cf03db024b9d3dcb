package mqtt

import (
	"fmt"
	"sync"

	"github.com/sensorstorm/sensorstorm/state"
	"github.com/sensorstorm/sensorstorm/topology"
)

var _ topology.Positioner = (*Source)(nil)

// position is a place in the spool: the record with sequence seq, of
// which the first k particles were emitted.
type position struct {
	seq uint64
	k   uint64
}

func (p position) bytes() []byte {
	w := state.NewWriter(nil)
	w.PutUvarint(p.seq)
	w.PutUvarint(p.k)
	return w.Bytes()
}

func parsePosition(b []byte) (position, error) {
	r := state.NewReader(b)
	p := position{seq: r.ReadUvarint(), k: r.ReadUvarint()}
	if err := r.Err(); err != nil {
		return position{}, fmt.Errorf("mqtt: position: %w", err)
	}
	return p, nil
}

// positions is a source's side of checkpoints: where the records it
// handed to the pipeline start in its count of particles emitted, and
// which records wait for a checkpoint to leave the spool.
type positions struct {
	mu sync.Mutex
	// starts are the records whose particles began, oldest first, with
	// the count of particles emitted before their first.
	starts []recordStart
	// handed are the records handed to the pipeline, in order, that no
	// complete checkpoint covers yet.
	handed []uint64
	// count is the particles emitted so far in this run; owned by the
	// emitting goroutine.
	count int64
	// resume is where a restored run starts: the records before it are
	// done, and the first k particles of its record are not emitted
	// again.
	resume position
}

type recordStart struct {
	seq   uint64
	start int64
}

// Position implements topology.Positioner: the record the emitted-th
// particle of this run came from, and how many of its particles were
// emitted before.
func (s *Source) Position(emitted uint64) ([]byte, error) {
	if !s.cfg.Checkpoints {
		return nil, fmt.Errorf("mqtt: the run takes checkpoints but the source was not configured for them (Config.Checkpoints)")
	}
	p := &s.positions
	p.mu.Lock()
	defer p.mu.Unlock()
	pos := p.resume
	for i := len(p.starts) - 1; i >= 0; i-- {
		if st := p.starts[i]; st.start <= int64(emitted) {
			pos = position{seq: st.seq, k: uint64(int64(emitted) - st.start)}
			break
		}
	}
	return pos.bytes(), nil
}

// Committed implements topology.Positioner: the records before the
// position leave the spool.
func (s *Source) Committed(b []byte) {
	pos, err := parsePosition(b)
	if err != nil {
		return
	}
	p := &s.positions
	p.mu.Lock()
	n := 0
	for n < len(p.handed) && p.handed[n] < pos.seq {
		n++
	}
	done := p.handed[:n]
	p.handed = p.handed[n:]
	i := 0
	for i+1 < len(p.starts) && p.starts[i+1].seq <= pos.seq {
		i++
	}
	p.starts = p.starts[i:]
	p.mu.Unlock()
	for _, seq := range done {
		s.spool.Complete(seq)
		s.stats.Completed.Add(1)
	}
}

// Resume implements topology.Positioner: Run starts from the record at
// the position, leaving out the particles of it emitted before.
func (s *Source) Resume(b []byte) error {
	pos, err := parsePosition(b)
	if err != nil {
		return err
	}
	s.positions.resume = pos
	return nil
}

// skipCovered completes the spool's records before the position resumed
// from: the checkpoint holds their effect.
func (s *Source) skipCovered() error {
	first := s.positions.resume.seq
	if first == 0 {
		return nil
	}
	var covered []uint64
	err := s.spool.Pending(func(seq uint64, _ []byte) error {
		if seq < first {
			covered = append(covered, seq)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mqtt: resume from record %d: %w", first, err)
	}
	for _, seq := range covered {
		s.spool.Complete(seq)
	}
	if len(covered) > 0 {
		s.cfg.Logger.Info("mqtt: resuming from a checkpoint's position", "record", first, "particles_emitted", s.positions.resume.k, "covered", len(covered))
	}
	return nil
}

// handing notes the records of a batch handed to the pipeline.
func (p *positions) handing(msgs []*message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		p.handed = append(p.handed, m.seq)
	}
}

// skipping reports whether the particle of m about to be emitted was
// emitted before the checkpoint resumed from; it notes where m's
// particles start when the first comes. Called by the emitting goroutine.
func (p *positions) skipping(m *message) bool {
	if m.emitted == 0 {
		start := p.count
		if m.seq == p.resume.seq {
			start -= int64(p.resume.k)
		}
		p.mu.Lock()
		p.starts = append(p.starts, recordStart{seq: m.seq, start: start})
		p.mu.Unlock()
	}
	return m.seq == p.resume.seq && uint64(m.emitted) < p.resume.k
}
