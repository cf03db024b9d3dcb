package statuspage

import (
	"math"
	"time"

	"github.com/sensorstorm/sensorstorm/topology"
)

// Snapshot is one update of the page, sent as the data of a server-sent
// event on /events and served at /snapshot, as JSON. Times are
// milliseconds since the Unix epoch, durations seconds, and members marked
// omitempty are left out when absent:
//
//	{"title": "ingest sensors/#", "wall": 1764993600000, "stream": 1764993599950,
//	 "control": false, "pending_trees": 12, "max_pending": 10000,
//	 "components": [{"name": "mqtt", "kind": "source", "parallelism": 1,
//	   "in": 0, "out": 5120, "rate_in": 0, "rate_out": 250, "buffered": 0, ...}, ...],
//	 "edges": [{"from": "mqtt", "to": "out", "grouping": "global"}],
//	 "connectors": [{"component": "mqtt", "instance": 0,
//	   "connections": [{"address": "tcp://a:1883", "state": "standby"},
//	                   {"address": "tcp://b:1883", "state": "connected"}],
//	   "counters": [{"name": "received", "value": 5120}, {"name": "acknowledged", "value": 5120}, ...],
//	   "backlog": {"messages": 0, "bytes": 0, "on_disk": 0, "read_back": 0, "age": 0,
//	     "at_quota": false, "drain_rate": 250, "add_rate": 250}}],
//	 "checkpoint": {...}, "replay": {...}, "tap": {...}}
//
// components are the graph's nodes with the engine's counters
// ([ComponentSnapshot]); connectors the panels of the Reporters, in the
// order of components and of their instances ([ConnectorSnapshot]), whose
// counters keep the order the Reporter gave, and whose backlog (what waits
// on disk for the pipeline, its age, drain rate and time to catch up) the
// page marks loudly when at its disk quota; replay a replay's progress
// ([ReplaySnapshot]), the JSON of connectors/replay's Status with progress
// and eta; tap the sampled plots ([TapSnapshot]); finished marks the last
// snapshot, sent when the run ended, so that the page shows the run's
// final figures instead of a stream cut mid-run.
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
	// Replay is the progress of the replay that is the run's clock,
	// absent without Config.Replay.
	Replay *ReplaySnapshot `json:"replay,omitempty"`
	// Connectors are the panels of the sources and sinks with a state of
	// their own (Reporters), in the order of Components and of their
	// instances; absent without any.
	Connectors []ConnectorSnapshot `json:"connectors,omitempty"`
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

// ReplayStatus is the progress of a replay that is the run's clock: the
// fields of connectors/replay's Status, whose JSON it is, and the pace
// the page estimates the time left from.
type ReplayStatus struct {
	// Speed is the speed as the replay names it: a factor of the
	// recording's pace, such as "10x", or "max".
	Speed string `json:"speed"`
	// Pace is the factor of the recording's pace, 0 when unpaced (the
	// replay goes as fast as the pipeline takes its particles). Not
	// served: Speed says it.
	Pace float64 `json:"-"`
	// Paused tells whether the replay is paused; Done whether it ended.
	Paused bool `json:"paused"`
	Done   bool `json:"done"`
	// Position is the event time of the last particle emitted, the zero
	// time before the first. First and Last are the event times of the
	// first and last records of the current pass, the zero time when
	// unknown: Position moves from one to the other.
	Position time.Time `json:"position"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	// Pass counts the passes of a looping replay from 0.
	Pass int `json:"pass"`
	// Read counts the records read: Emitted as particles, Invalid
	// (malformed), Skipped (without values), Outside the time range
	// replayed, and those read ahead and not yet emitted.
	Read    uint64 `json:"read"`
	Emitted uint64 `json:"emitted"`
	Invalid uint64 `json:"invalid"`
	Skipped uint64 `json:"skipped"`
	Outside uint64 `json:"outside"`
	// BytesRead and BytesTotal measure the progress of the current pass
	// through the files.
	BytesRead  int64 `json:"bytes_read"`
	BytesTotal int64 `json:"bytes_total"`
}

// ReplaySnapshot is a replay's progress.
type ReplaySnapshot struct {
	ReplayStatus
	// Progress is how far Position is from First to Last, from 0 to 1;
	// absent when the span is unknown.
	Progress *float64 `json:"progress,omitempty"`
	// ETA is the wall time left at the current speed, in seconds, or
	// unpaced at the event-time pace since the last snapshot; absent when
	// unknown or paused.
	ETA *float64 `json:"eta,omitempty"`
}

// replaySnapshot describes st, whose position was prevPos d ago (the
// zero time before the first snapshot).
func replaySnapshot(st ReplayStatus, prevPos time.Time, d time.Duration) *ReplaySnapshot {
	r := &ReplaySnapshot{ReplayStatus: st}
	if st.First.IsZero() || !st.Last.After(st.First) || st.Position.IsZero() {
		return r
	}
	span := st.Last.Sub(st.First)
	progress := math.Max(0, math.Min(1, float64(st.Position.Sub(st.First))/float64(span)))
	r.Progress = &progress
	if st.Paused || st.Done || st.Pace < 0 {
		return r
	}
	pace := st.Pace // event seconds per wall second
	if pace == 0 {  // unpaced
		if prevPos.IsZero() || d <= 0 || !st.Position.After(prevPos) {
			return r
		}
		pace = st.Position.Sub(prevPos).Seconds() / d.Seconds()
	}
	eta := math.Max(0, st.Last.Sub(st.Position).Seconds()/pace)
	r.ETA = &eta
	return r
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
