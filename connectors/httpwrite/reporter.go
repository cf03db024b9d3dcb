package httpwrite

import "iter"

// Connections yields the address the source listens on with its state:
// "starting" (Config.Addr, before Run listens), "listening", then
// "stopping" once Run stops taking writes. It is safe to call while the
// source runs; a status page shows it (statuspage.Reporter).
func (s *Source) Connections() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		addr := s.Addr()
		switch {
		case addr == nil:
			yield(s.cfg.Addr, "starting")
		case s.stopping.Load():
			yield(addr.String(), "stopping")
		default:
			yield(addr.String(), "listening")
		}
	}
}

// Counters yields the source's main counters, from Stats, by the names a
// status page shows: requests, accepted, points (Emitted), invalid,
// refused (BadRequests, Unauthorized, TooLarge and Unavailable) and
// replayed. It is safe to call while the source runs.
func (s *Source) Counters() iter.Seq2[string, int64] {
	st := &s.stats
	return func(yield func(string, int64) bool) {
		refused := st.BadRequests.Load() + st.Unauthorized.Load() + st.TooLarge.Load() + st.Unavailable.Load()
		_ = yield("requests", int64(st.Requests.Load())) && yield("accepted", int64(st.Accepted.Load())) &&
			yield("points", int64(st.Emitted.Load())) && yield("invalid", int64(st.Invalid.Load())) &&
			yield("refused", int64(refused)) && yield("recovered", int64(st.Recovered.Load()))
	}
}
