package metaparticle

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/particle"
)

// Tick is a timer tick. The engine hands every bolt instance a Tick in the
// stream-time domain at every multiple of its tick interval
// (topology.Config.TickInterval); a user's source may emit ticks in event
// time, which are released by the watermark like data.
type Tick struct {
	// Domain is the time domain the tick was scheduled in.
	Domain Domain
}

// Domain is a time domain for timers and ticks.
type Domain uint8

const (
	// EventTime timers fire when the watermark passes them.
	EventTime Domain = iota
	// StreamTime timers fire when the stream clock passes them.
	StreamTime
)

// String returns "event" or "stream".
func (d Domain) String() string {
	if d == StreamTime {
		return "stream"
	}
	return "event"
}

// MetaType returns "tick".
func (Tick) MetaType() string { return "tick" }

// SpeedChange tells the bolts downstream of a replay that its speed
// changed at the particle's event time. Speed is a factor of the wall
// clock, or streamclock.Unpaced; Paused tells that the replay stopped until
// the next SpeedChange. The run's stream clock, which every instance reads,
// has changed already; the particle is for operations that want to know.
type SpeedChange struct {
	Speed  float64
	Paused bool
}

// MetaType returns "speed".
func (SpeedChange) MetaType() string { return "speed" }

// String describes the change, for logs.
func (s SpeedChange) String() string {
	if s.Paused {
		return "paused"
	}
	return fmt.Sprintf("speed %gx", s.Speed)
}

// New returns a meta particle carrying m at event time t. Its identity
// (Origin, Seq) is set by the component that emits it.
func New(t int64, m particle.Meta) particle.Particle {
	return particle.Particle{Time: t, Meta: m}
}

// ID is the identity of a meta particle.
type ID struct {
	Origin uint32
	Seq    uint64
}

// IDOf returns the identity of meta particle p.
func IDOf(p *particle.Particle) ID { return ID{Origin: p.Origin, Seq: p.Seq} }

// Barrier marks checkpoint N in the stream. The engine's own: a source
// instance emits it when the run's coordinator starts the checkpoint,
// and every bolt instance snapshots its state at the first copy it
// receives and forwards it at once. Unlike other meta particles it does
// not wait for the watermark and operations never see it: the cut it
// marks is in arrival order on each edge (DESIGN.md, "Checkpoints and
// exactly-once output").
type Barrier struct {
	Checkpoint uint64
}

// MetaType returns "barrier".
func (Barrier) MetaType() string { return "barrier" }
