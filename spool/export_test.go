package spool

import "os"

// Crash abandons s as a killed process would: what was not synced is
// lost, the files and the lock are released, nothing is deleted.
func (s *Spool) Crash() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.f.Close()
	s.ends.f.Close()
	s.lock.Close()
}

// BreakWrites makes every later write to the active segment fail, as on a
// file system gone read-only: the segment is reopened for reading only.
func (s *Spool) BreakWrites() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	f, err := os.Open(s.f.Name())
	if err != nil {
		return err
	}
	s.f.Close()
	s.f = f
	return nil
}

// SyncKilled is a Sync during which the process is killed after the
// fdatasync, before the Sync returns: the records are written, but ENDS
// does not count them as acknowledged. Crash s afterwards.
func (s *Spool) SyncKilled() error {
	s.wmu.Lock()
	before := s.ends.saved.durable
	s.wmu.Unlock()
	if err := s.Sync(); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	e := s.currentEnds()
	e.durable = before
	return s.ends.store(e, true)
}
