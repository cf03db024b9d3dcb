package statuspage

import (
	"math"
	"strings"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Snapshot is one update of the page, sent as the data of a server-sent
// event and served at /snapshot. Times are milliseconds since the Unix
// epoch.
type Snapshot struct {
	Title string `json:"title"`
	// Wall is the wall time of the snapshot; Stream the stream clock's.
	Wall   int64 `json:"wall"`
	Stream int64 `json:"stream"`
	// Control tells whether the page may change the run (replay's speed).
	Control    bool                 `json:"control"`
	Components []ComponentSnapshot  `json:"components"`
	Edges      []topology.GraphEdge `json:"edges"`
	// PendingTrees is the number of trees the acker has not finished;
	// MaxPending the bound on them.
	PendingTrees int `json:"pending_trees"`
	MaxPending   int `json:"max_pending,omitempty"`
	// Checkpoint is the run's last checkpoint, absent without
	// checkpoints.
	Checkpoint *CheckpointSnapshot `json:"checkpoint,omitempty"`
	Replay     *ReplaySnapshot     `json:"replay,omitempty"`
	MQTT       *MQTTSnapshot       `json:"mqtt,omitempty"`
	// Tap is the sample of recent values, absent without a Tap.
	Tap *TapSnapshot `json:"tap,omitempty"`
	// Finished marks the last snapshot, sent when Run ends: the final
	// figures of the run.
	Finished bool `json:"finished,omitempty"`
}

// CheckpointSnapshot is the newest complete checkpoint of a run: its id
// (0 before the first), when it completed (ms since the epoch), how long
// it took (ms) and its bytes, and the run's counts.
type CheckpointSnapshot struct {
	ID         uint64 `json:"id"`
	At         int64  `json:"at,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Bytes      int64  `json:"bytes"`
	Completed  uint64 `json:"completed"`
	Failed     uint64 `json:"failed"`
}

// ComponentSnapshot is one node of the graph with its figures, those of
// topology.ComponentStats (which /metrics serves under the same names).
type ComponentSnapshot struct {
	topology.GraphComponent
	In  uint64 `json:"in"`
	Out uint64 `json:"out"`
	// RateIn and RateOut are particles a second since the last snapshot.
	RateIn        float64 `json:"rate_in"`
	RateOut       float64 `json:"rate_out"`
	Buffered      int64   `json:"buffered"`
	BufferedBytes int64   `json:"buffered_bytes"`
	FullBuffers   uint64  `json:"full_buffers"`
	// Watermark is absent before the first and after the end of the
	// stream; WatermarkLag is the stream clock minus it, in seconds.
	Watermark    *int64   `json:"watermark,omitempty"`
	WatermarkLag *float64 `json:"watermark_lag,omitempty"`
	Late         uint64   `json:"late"`
	Behind       uint64   `json:"behind"`
	Invalid      uint64   `json:"invalid"`
	Errors       uint64   `json:"errors"`
	Acked        uint64   `json:"acked"`
	Failed       uint64   `json:"failed"`
	// DeadLetters counts what the component dead-lettered, as the Tap
	// saw it; zero without one.
	DeadLetters uint64 `json:"dead_letters"`
}

// ReplaySnapshot is a replay's progress.
type ReplaySnapshot struct {
	replay.Status
	// Progress is how far Position is from First to Last, from 0 to 1;
	// absent when the span is unknown.
	Progress *float64 `json:"progress,omitempty"`
	// ETA is the wall time left at the current speed, in seconds, or
	// unpaced at the event-time pace since the last snapshot; absent when
	// unknown or paused.
	ETA *float64 `json:"eta,omitempty"`
}

// MQTTSnapshot is an MQTT source's connection and counters.
type MQTTSnapshot struct {
	Brokers []BrokerSnapshot `json:"brokers"`
	// Received, Acked, Redelivered, Spooled, Replayed, Invalid and
	// Buffered are the source's mqtt.Stats.
	Received    uint64 `json:"received"`
	Acked       uint64 `json:"acked"`
	Redelivered uint64 `json:"redelivered"`
	Spooled     uint64 `json:"spooled"`
	Replayed    uint64 `json:"replayed"`
	Invalid     uint64 `json:"invalid"`
	Buffered    int64  `json:"buffered"`
	Connects    uint64 `json:"connects"`
	// Spool is absent in modes without a spool.
	Spool *spool.Stats `json:"spool,omitempty"`
	// Backlog is what waits in the spool for the pipeline; absent in
	// modes without a spool.
	Backlog *BacklogSnapshot `json:"backlog,omitempty"`
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
	// AtQuota reports the disk quota reached: the source acknowledges
	// nothing, and the broker holds or drops what it sends.
	AtQuota bool `json:"at_quota"`
	// DrainRate and AddRate are messages a second taken by the pipeline
	// and added by the broker, over the last few seconds.
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

// BrokerSnapshot is the state of the connection to one of the brokers.
type BrokerSnapshot struct {
	URL string `json:"url"`
	// State is "connected", "connecting" (never connected yet),
	// "reconnecting" (the connection was lost) or, for the brokers other
	// than the one of the latest attempt, "standby": a client holds one
	// connection at a time and tries the brokers in turn.
	State string `json:"state"`
}

// replaySnapshot describes st, whose position was prevPos d ago (the
// zero time before the first snapshot).
func replaySnapshot(st replay.Status, prevPos time.Time, d time.Duration) *ReplaySnapshot {
	r := &ReplaySnapshot{Status: st}
	if st.First.IsZero() || !st.Last.After(st.First) || st.Position.IsZero() {
		return r
	}
	span := st.Last.Sub(st.First)
	progress := math.Max(0, math.Min(1, float64(st.Position.Sub(st.First))/float64(span)))
	r.Progress = &progress
	if st.Paused || st.Done || st.Speed <= 0 {
		return r
	}
	pace := float64(st.Speed) // event seconds per wall second
	if st.Speed == replay.Max {
		if prevPos.IsZero() || d <= 0 || !st.Position.After(prevPos) {
			return r
		}
		pace = st.Position.Sub(prevPos).Seconds() / d.Seconds()
	}
	eta := math.Max(0, st.Last.Sub(st.Position).Seconds()/pace)
	r.ETA = &eta
	return r
}

// mqttSnapshot describes an MQTT source at the wall time now.
func mqttSnapshot(m *MQTT, now time.Time) *MQTTSnapshot {
	st := m.Source.Stats()
	connects, lost := st.Connects.Load(), st.ConnectionsLost.Load()
	state := "connected"
	switch {
	case connects == 0:
		state = "connecting"
	case lost >= connects:
		state = "reconnecting"
	}
	s := &MQTTSnapshot{
		Received: st.Received.Load(), Acked: st.Acked.Load(), Redelivered: st.Redelivered.Load(),
		Spooled: st.Spooled.Load(), Replayed: st.Replayed.Load(), Invalid: st.Invalid.Load(),
		Buffered: st.Buffered.Load(), Connects: connects,
	}
	current := m.Source.Broker()
	for _, b := range m.Brokers {
		st := state
		if current != "" && !sameBroker(b, current) {
			st = "standby"
		}
		s.Brokers = append(s.Brokers, BrokerSnapshot{URL: b, State: st})
	}
	if sp, ok := m.Source.SpoolStats(); ok {
		s.Spool = &sp
	}
	if bl, ok := m.Source.BacklogStats(); ok {
		s.Backlog = backlogSnapshot(bl, now)
	}
	return s
}

// counts is what the rates of the next snapshot are computed from.
type counts struct {
	at      time.Time
	in, out map[string]uint64
	// position is the replay's, for the pace of an unpaced one.
	position time.Time
}

// rate is the change from prev to now over d, per second.
func rate(now, prev uint64, d time.Duration) float64 {
	if d <= 0 || now < prev {
		return 0
	}
	return float64(now-prev) / d.Seconds()
}

// componentSnapshot describes the component c from its counters s, its
// watermark lag measured at the stream time stream (ns).
func componentSnapshot(c topology.GraphComponent, s *topology.ComponentStats, stream int64) ComponentSnapshot {
	cs := ComponentSnapshot{
		GraphComponent: c,
		In:             s.In.Load(), Out: s.Out.Load(),
		Buffered: s.Buffered.Load(), BufferedBytes: s.BufferedBytes.Load(), FullBuffers: s.FullBuffers.Load(),
		Late: s.Late.Load(), Behind: s.Behind.Load(), Invalid: s.Invalid.Load(), Errors: s.Errors.Load(),
		Acked: s.Acked.Load(), Failed: s.Failed.Load(),
	}
	// Zero was never set; MaxInt64 marks the end of the stream.
	if wm := s.Watermark.Load(); wm != 0 && wm != math.MaxInt64 {
		ms := wm / 1e6
		lag := float64(stream-wm) / 1e9
		cs.Watermark, cs.WatermarkLag = &ms, &lag
	}
	return cs
}

// mqttSource is what the page reads of an MQTT source; *mqtt.Source is
// one.
type mqttSource interface {
	Stats() *mqtt.Stats
	Broker() string
	SpoolStats() (spool.Stats, bool)
	BacklogStats() (spool.BacklogStats, bool)
}

var _ mqttSource = (*mqtt.Source)(nil)

// sameBroker reports whether a broker as configured and a broker URL as
// the client tried it name the same broker: the client adds the scheme
// when the configuration leaves it out.
func sameBroker(configured, tried string) bool {
	return configured == tried || strings.TrimPrefix(tried, "tcp://") == configured
}
