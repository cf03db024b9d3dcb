package topology

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/particle"
)

// barrierSeqBit marks, with metaSeqBit, the sequence numbers of barriers:
// numbered by their checkpoint, apart from other meta particles, so that
// a restored run numbers its meta particles as the run before it did.
const barrierSeqBit = 1 << 62

// instanceName names a source instance in checkpoints.
func (s *sourceInstance) instanceName() string { return fmt.Sprintf("source/%s/%d", s.name, s.index) }

// barrierNow emits the barrier the coordinator asked for, unless Emit
// holds the instance: Emit then emits it after its particle.
func (s *sourceInstance) barrierNow() {
	if s.topo.ckpt == nil || s.wantBarrier.Load() == s.lastBarrier.Load() || !s.mu.TryLock() {
		return
	}
	defer s.mu.Unlock()
	s.barrierLocked()
}

// barrierLocked emits barrier N if the coordinator asked for it, behind
// everything the instance emitted, and hands the coordinator the
// instance's position. s.mu is held.
func (s *sourceInstance) barrierLocked() {
	id := s.wantBarrier.Load()
	if id == s.lastBarrier.Load() || s.skip > 0 {
		// A restored instance takes part once it is back where the
		// checkpoint it restored left it.
		return
	}
	s.lastBarrier.Store(id)
	if s.eos {
		// Its final position stands for it.
		return
	}
	s.env = envelope{p: particle.Particle{Time: s.router.high(), Meta: metaparticle.Barrier{Checkpoint: id}, Origin: s.origin, Seq: metaSeqBit | barrierSeqBit | id}}
	s.router.route("", &s.env, nil)
	// Delivered even while the source stops: a final checkpoint is taken
	// then.
	s.router.handOn(s.topo.drainCtx, false)
	pos, err := s.position()
	s.topo.ckpt.send(ckptReport{id: id, instance: s.instanceName(), source: pos, err: err})
}

// position returns where the instance is. s.mu is held.
func (s *sourceInstance) position() (*sourcePosition, error) {
	pos := &sourcePosition{seq: s.seq, emitted: s.emitted, src: s}
	if p, ok := positionerOf(s.src); ok {
		own, err := p.Position(s.emitted)
		if err != nil {
			return pos, fmt.Errorf("position: %w", err)
		}
		pos.own = own
		if own == nil {
			pos.own = []byte{}
		}
	}
	return pos, nil
}

// ended tells the coordinator the instance's final position once it ended
// its stream. s.mu is held.
func (s *sourceInstance) ended() {
	s.eos = true
	if s.topo.ckpt == nil {
		return
	}
	pos, err := s.position()
	s.topo.ckpt.end(ckptReport{instance: s.instanceName(), source: pos, err: err})
}

// resume starts the instance from a checkpoint's position: a Positioner
// from its own, any other source from its start, its first particles
// dropped, numbered so that the rest keep their identities.
func (s *sourceInstance) resume(pos sourcePosition) error {
	if p, ok := positionerOf(s.src); ok {
		s.seq = pos.seq
		return p.Resume(pos.own)
	}
	if pos.emitted > pos.seq {
		return fmt.Errorf("%w: source position %d beyond sequence %d", ErrCheckpointMismatch, pos.emitted, pos.seq)
	}
	s.skip = pos.emitted
	s.seq = pos.seq - pos.emitted
	s.skipping.Store(s.skip > 0)
	return nil
}

// skipOne drops a particle a restored checkpoint covers, as if emitted,
// and reports whether it did: false once the instance is past them.
func (s *sourceInstance) skipOne(p *particle.Particle, msgID uint64, track bool) bool {
	s.mu.Lock()
	if s.skip == 0 {
		s.mu.Unlock()
		return false
	}
	s.skip--
	if s.skip == 0 {
		s.skipping.Store(false)
	}
	s.emitted++
	s.seq++
	// Lateness downstream is judged against the high-water mark, which
	// must be what it was.
	s.router.expect("", p.Time)
	s.mu.Unlock()
	if track {
		s.ackr.Ack(msgID) // outside s.mu: Ack may emit
	}
	return true
}
