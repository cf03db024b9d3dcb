package topology

import (
	"context"

	"github.com/sensorstorm/sensorstorm/particle"
)

// DeadLetter is a particle or a raw input the topology gave up on.
type DeadLetter struct {
	// Component is the source or bolt that gave up, with its instance.
	Component string
	Instance  int
	// Reason says why, for example "invalid", "late" or "timeout".
	Reason string
	// Err is the error that caused it, if any: a *particle.DecodeError
	// names the input and position of bad input.
	Err error
	// Particle is set when the input could be decoded.
	Particle *particle.Particle
	// Raw is the undecodable input, when there was one.
	Raw []byte
}

// DeadLetterSink receives dead letters. It is called from many goroutines
// and must be safe for concurrent use; it should not block for long.
type DeadLetterSink interface {
	DeadLetter(ctx context.Context, d DeadLetter)
}

// DeadLetterFunc adapts a function to a DeadLetterSink.
type DeadLetterFunc func(ctx context.Context, d DeadLetter)

// DeadLetter calls f.
func (f DeadLetterFunc) DeadLetter(ctx context.Context, d DeadLetter) { f(ctx, d) }
