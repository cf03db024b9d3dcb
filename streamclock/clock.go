package streamclock

import (
	"fmt"
	"math"
)

// Clock is a run's stream clock: the event time, in nanoseconds since the
// Unix epoch, that the run has reached. Live it is the wall clock; in a
// replay it is the replay's position, which moves with the replay's speed
// and stands still while it is paused. Now must be safe for concurrent use:
// every instance of a run reads the one clock.
type Clock interface {
	Now() int64
}

// Func adapts a function to a Clock.
type Func func() int64

// Now calls f.
func (f Func) Now() int64 { return f() }

// Live returns the stream clock of a live run: the wall clock w.
func Live(w Wall) Clock { return Func(func() int64 { return w.Now().UnixNano() }) }

// Unpaced is the speed of a replay that runs as fast as possible.
const Unpaced = math.MaxFloat64

// MinSpeed and MaxSpeed bound a paced replay's speed factor.
const (
	MinSpeed = 0.01
	MaxSpeed = 10000
)

// ValidSpeed reports an error for a speed outside [MinSpeed, MaxSpeed] that
// is not Unpaced.
func ValidSpeed(speed float64) error {
	if speed == Unpaced || (speed >= MinSpeed && speed <= MaxSpeed) {
		return nil
	}
	return fmt.Errorf("streamclock: speed %g outside [%g, %g] and not unpaced", speed, float64(MinSpeed), float64(MaxSpeed))
}
