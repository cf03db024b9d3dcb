package metaparticle

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/particle"
)

// Tick is a timer tick. Ticks in event time are released by the watermark
// like data; ticks in stream time mark a point of the stream clock.
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

// EndOfStream tells a bolt instance that one of its inputs has ended: the
// instance flushes once every input has ended.
type EndOfStream struct{}

// MetaType returns "eos".
func (EndOfStream) MetaType() string { return "eos" }

// SpeedChange sets the speed of every stream clock downstream from the
// particle's event time on. Speed is a factor of the wall clock, or
// streamclock.Unpaced; Paused stops the clocks until the next SpeedChange.
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
