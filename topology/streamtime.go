package topology

// StreamTime returns the running topology's stream-clock time in ns
// (Config.Clock, or its default), and false before Run. In a
// replay without a clock of its own, it is math.MinInt64 until the first
// particle.
func (t *Topology) StreamTime() (int64, bool) {
	r := t.current.Load()
	if r == nil {
		return 0, false
	}
	return r.clock.Now(), true
}
