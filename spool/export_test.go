package spool

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
