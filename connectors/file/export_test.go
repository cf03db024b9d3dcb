package file

// Crash abandons s as a killed process would: its file is closed without
// writing the lines it gathers, and s is closed.
func Crash(s *Sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != nil {
		s.file.Close()
	}
	s.closed = true
}
