package postgres

import "iter"

// Connections yields nothing: the sink's connections are a pool, which
// its counters tell about. With Counters it lets a status page show the
// sink (statuspage.Reporter).
func (s *Sink) Connections() iter.Seq2[string, string] {
	return func(func(string, string) bool) {}
}

// Counters yields the sink's counters, from Stats, by the names a status
// page shows: written, merged, duplicates, rejected and batches. It is
// safe to call while the sink runs.
func (s *Sink) Counters() iter.Seq2[string, int64] {
	st := &s.stats
	return func(yield func(string, int64) bool) {
		_ = yield("written", int64(st.Written.Load())) && yield("merged", int64(st.Merged.Load())) &&
			yield("duplicates", int64(st.Duplicates.Load())) && yield("rejected", int64(st.Rejected.Load())) &&
			yield("batches", int64(st.Batches.Load()))
	}
}
