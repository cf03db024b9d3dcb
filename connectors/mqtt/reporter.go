package mqtt

import (
	"iter"
	"strings"
	"sync/atomic"
)

// Connections yields each of the source's brokers with the state of its
// connection: "connected", "connecting" (never connected yet),
// "reconnecting" (the connection was lost) or, for the brokers other than
// the one of the latest attempt, "standby": a client holds one connection
// at a time and tries the brokers in turn. It is safe to call while the
// source runs; a status page shows it (statuspage.Reporter).
func (s *Source) Connections() iter.Seq2[string, string] {
	return brokerStates(s.cfg.Brokers, &s.stats.Connects, &s.stats.ConnectionsLost, s.Broker())
}

// Counters yields the source's main counters, from Stats, by the names a
// status page shows: received, acknowledged, redelivered, spooled,
// replayed, invalid, waiting (Buffered, a level) and connections
// (Connects). It is safe to call while the source runs.
func (s *Source) Counters() iter.Seq2[string, int64] {
	st := &s.stats
	return func(yield func(string, int64) bool) {
		_ = yield("received", int64(st.Received.Load())) && yield("acknowledged", int64(st.Acked.Load())) &&
			yield("redelivered", int64(st.Redelivered.Load())) && yield("spooled", int64(st.Spooled.Load())) &&
			yield("recovered", int64(st.Recovered.Load())) && yield("invalid", int64(st.Invalid.Load())) &&
			yield("waiting", st.Buffered.Load()) && yield("connections", int64(st.Connects.Load()))
	}
}

// Connections yields each of the sink's brokers with the state of its
// connection, as Source.Connections does, except that before the first
// attempt every broker is "idle": the sink connects when it has a
// particle to publish. It is safe to call while the sink runs.
func (s *Sink) Connections() iter.Seq2[string, string] {
	u := s.broker.Load()
	if u == nil {
		return func(yield func(string, string) bool) {
			for _, b := range s.cfg.Brokers {
				if !yield(b, "idle") {
					return
				}
			}
		}
	}
	return brokerStates(s.cfg.Brokers, &s.stats.Connects, &s.stats.ConnectionsLost, *u)
}

// Counters yields the sink's counters, from SinkStats, by the names a
// status page shows: published, confirmed, republished, invalid and
// connections (Connects). It is safe to call while the sink runs.
func (s *Sink) Counters() iter.Seq2[string, int64] {
	st := &s.stats
	return func(yield func(string, int64) bool) {
		_ = yield("published", int64(st.Published.Load())) && yield("confirmed", int64(st.Confirmed.Load())) &&
			yield("republished", int64(st.Republished.Load())) && yield("invalid", int64(st.Invalid.Load())) &&
			yield("connections", int64(st.Connects.Load()))
	}
}

// brokerStates yields the brokers as configured, each with its state
// given the connection counts and the broker of the latest attempt
// (current, "" before the first).
func brokerStates(brokers []string, connects, lost *atomic.Uint64, current string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		c, l := connects.Load(), lost.Load()
		state := "connected"
		switch {
		case c == 0:
			state = "connecting"
		case l >= c:
			state = "reconnecting"
		}
		for _, b := range brokers {
			st := state
			if current != "" && !sameBroker(b, current) {
				st = "standby"
			}
			if !yield(b, st) {
				return
			}
		}
	}
}

// sameBroker reports whether a broker as configured and a broker URL as
// the client tried it name the same broker: the client adds the scheme
// when the configuration leaves it out.
func sameBroker(configured, tried string) bool {
	return configured == tried || strings.TrimPrefix(tried, "tcp://") == configured
}
