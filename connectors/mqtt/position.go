package mqtt

import (
	"errors"
	"fmt"

	"github.com/sensorstorm/sensorstorm/topology"
)

var _ topology.Positioner = (*Source)(nil)

// errNoCheckpoints refuses positions to a source not configured for them:
// its records would leave the spool before a checkpoint covers them.
var errNoCheckpoints = errors.New("mqtt: the run takes checkpoints but the source was not configured for them (Config.Checkpoints)")

// Position implements topology.Positioner: the record the emitted-th
// particle of this run came from, and how many of its particles were
// emitted before.
func (s *Source) Position(emitted uint64) ([]byte, error) {
	if !s.cfg.Checkpoints {
		return nil, errNoCheckpoints
	}
	return s.positions.At(emitted).MarshalBinary()
}

// Committed implements topology.Positioner: the records before the
// position leave the spool.
func (s *Source) Committed(pos []byte) {
	s.stats.Completed.Add(uint64(s.positions.Commit(s.spool, pos)))
}

// Resume implements topology.Positioner: Run starts from the record at the
// position, leaving out the particles of it emitted before.
func (s *Source) Resume(pos []byte) error {
	if err := s.positions.ResumeAt(pos); err != nil {
		return fmt.Errorf("mqtt: %w", err)
	}
	return nil
}

// skipCovered completes the spool's records before the position resumed
// from: the checkpoint holds their effect.
func (s *Source) skipCovered() error {
	n, err := s.positions.CompleteCovered(s.spool)
	if err != nil {
		return fmt.Errorf("mqtt: resume from record %d: %w", s.positions.Resumed().Seq, err)
	}
	if n > 0 {
		pos := s.positions.Resumed()
		s.cfg.Logger.Info("mqtt: resuming from a checkpoint's position", "record", pos.Seq, "particles_emitted", pos.K, "covered", n)
	}
	return nil
}
