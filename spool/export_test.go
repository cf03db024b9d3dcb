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
