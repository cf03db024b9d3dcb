package mqtt

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/require"
)

// A client holds one connection at a time: the broker it tried last has
// the connection's state, the others stand by. (The source's states are
// the same, but that it connects at once: TestIngestStatusPage.)
func TestBrokerStates(t *testing.T) {
	brokers := []string{"tcp://a:1883", "b:1883"}
	for _, tc := range []struct {
		name           string
		connects, lost uint64
		current        string
		want           map[string]string
	}{
		{"before the first attempt, which a sink makes for its first particle", 0, 0, "", map[string]string{"tcp://a:1883": "idle", "b:1883": "idle"}},
		{"trying the first", 0, 0, "tcp://a:1883", map[string]string{"tcp://a:1883": "connecting", "b:1883": "standby"}},
		{"connected to the second, its scheme added", 1, 0, "tcp://b:1883", map[string]string{"tcp://a:1883": "standby", "b:1883": "connected"}},
		{"lost", 1, 1, "tcp://b:1883", map[string]string{"tcp://a:1883": "standby", "b:1883": "reconnecting"}},
		{"connected again", 2, 1, "tcp://a:1883", map[string]string{"tcp://a:1883": "connected", "b:1883": "standby"}},
	} {
		var s Sink
		s.cfg.Brokers = brokers
		s.stats.Connects.Store(tc.connects)
		s.stats.ConnectionsLost.Store(tc.lost)
		if tc.current != "" {
			s.broker.Store(&tc.current)
		}
		require.Equal(t, tc.want, maps.Collect(s.Connections()), tc.name)
	}
}

func TestSinkCounters(t *testing.T) {
	var s Sink
	s.stats.Published.Store(5)
	s.stats.Confirmed.Store(4)
	s.stats.Connects.Store(1)
	var names []string
	for name, v := range s.Counters() {
		names = append(names, name)
		require.Equal(t, map[string]int64{"published": 5, "confirmed": 4, "republished": 0, "invalid": 0, "connections": 1}[name], v, name)
	}
	require.Equal(t, []string{"published", "confirmed", "republished", "invalid", "connections"}, names)
}
