package statuspage

import (
	"iter"
	"time"

	"github.com/sensorstorm/sensorstorm/spool"
)

// Reporter is a source or sink with a state of its own, beyond the
// figures the engine keeps of every component: an MQTT client's
// connections to its brokers, an HTTP endpoint's requests. The page shows
// a panel of each, under the name of its component, with its connections
// and counters. If it also has the method
//
//	BacklogStats() (spool.BacklogStats, bool)
//
// (as metrics.Backlogged), the panel shows what waits in its spool too.
//
// The methods return standard types only, so that a connector implements
// Reporter without importing this package: a source or sink the page
// has never heard of appears on it. The page calls them at every update
// and for /snapshot, from goroutines of its own, while the connector
// runs: they must be safe for that, and must not block.
type Reporter interface {
	// Connections yields each place the connector connects to or listens
	// on, such as a broker's URL or an address, with the state of the
	// connection in a word, such as "connected", "reconnecting" or
	// "listening". It yields nothing for a connector without any.
	Connections() iter.Seq2[string, string]
	// Counters yields the connector's counters in the order the page
	// shows them: a name, such as "received", and a count since the
	// connector was made, or a level now, such as "waiting".
	Counters() iter.Seq2[string, int64]
}

// backlogged is a Reporter with a spool; metrics.Backlogged is the same.
type backlogged interface {
	BacklogStats() (spool.BacklogStats, bool)
}

// ConnectorSnapshot is the panel of a Reporter.
type ConnectorSnapshot struct {
	// Component is the name of its source or bolt in the graph; Instance
	// the index of the Reporter among the component's instances (0 for
	// a bolt's sink, which its instances share).
	Component string `json:"component"`
	Instance  int    `json:"instance"`
	// Connections and Counters are in the order the Reporter yields them.
	Connections []ConnectionSnapshot `json:"connections"`
	Counters    []CounterSnapshot    `json:"counters"`
	// Backlog is what waits in its spool; absent without a spool.
	Backlog *BacklogSnapshot `json:"backlog,omitempty"`
}

// ConnectionSnapshot is the state of one of a connector's connections.
type ConnectionSnapshot struct {
	// Address is the broker's URL, the address listened on, or any other
	// name the connector gives it.
	Address string `json:"address"`
	// State is a word, such as "connected", "connecting" (not yet),
	// "reconnecting" (the connection was lost), "standby" (an MQTT
	// client connects to one of its brokers at a time), "idle" (an MQTT
	// sink before its first particle), "listening".
	State string `json:"state"`
}

// CounterSnapshot is one of a connector's counters.
type CounterSnapshot struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// connectorSnapshots describes the Reporters among the instances of the
// component c, at the wall time now.
func connectorSnapshots(c string, instances []any, now time.Time) []ConnectorSnapshot {
	var out []ConnectorSnapshot
	for i, inst := range instances {
		r, ok := inst.(Reporter)
		if !ok {
			continue
		}
		cs := ConnectorSnapshot{Component: c, Instance: i, Connections: []ConnectionSnapshot{}, Counters: []CounterSnapshot{}}
		for addr, state := range r.Connections() {
			cs.Connections = append(cs.Connections, ConnectionSnapshot{Address: addr, State: state})
		}
		for name, v := range r.Counters() {
			cs.Counters = append(cs.Counters, CounterSnapshot{Name: name, Value: v})
		}
		if b, ok := r.(backlogged); ok {
			if st, ok := b.BacklogStats(); ok {
				cs.Backlog = backlogSnapshot(st, now)
			}
		}
		out = append(out, cs)
	}
	return out
}

// BacklogSnapshot is what waits in a source's spool for the pipeline, from
// spool.BacklogStats (which /metrics serves as sensorstorm_backlog_*).
type BacklogSnapshot struct {
	// Messages and Bytes wait; OnDisk of them are on disk only.
	// ReadBack counts the messages read back from disk so far.
	Messages int64  `json:"messages"`
	Bytes    int64  `json:"bytes"`
	OnDisk   int64  `json:"on_disk"`
	ReadBack uint64 `json:"read_back"`
	// Age is how long ago the oldest message waiting was received, in
	// seconds of wall time; 0 when none waits.
	Age float64 `json:"age"`
	// AtQuota reports the disk quota reached: the source takes nothing
	// more in, and what sends to it waits, retries or drops.
	AtQuota bool `json:"at_quota"`
	// DrainRate and AddRate are messages a second taken by the pipeline
	// and added, over the last few seconds.
	DrainRate float64 `json:"drain_rate"`
	AddRate   float64 `json:"add_rate"`
	// CatchUp estimates the seconds until the pipeline catches up;
	// absent when nothing waits or the backlog does not shrink.
	CatchUp *float64 `json:"catch_up,omitempty"`
}

// backlogSnapshot describes st at the wall time now.
func backlogSnapshot(st spool.BacklogStats, now time.Time) *BacklogSnapshot {
	b := &BacklogSnapshot{
		Messages: st.Records, Bytes: st.Bytes, OnDisk: st.OnDisk, ReadBack: st.ReadBack,
		AtQuota: st.Full, DrainRate: st.DrainRate, AddRate: st.AddRate,
	}
	if st.Oldest != 0 {
		b.Age = max(0, now.Sub(time.Unix(0, st.Oldest)).Seconds())
	}
	if st.CatchUp > 0 {
		c := st.CatchUp.Seconds()
		b.CatchUp = &c
	}
	return b
}
