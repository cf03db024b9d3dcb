package replay

import (
	"time"

	"github.com/sensorstorm/sensorstorm/streamclock"
)

// Wall is the wall clock that paces a replay: a streamclock.Wall that also
// makes one-shot timers. Tests drive a fake one.
type Wall interface {
	streamclock.Wall
	// At returns a channel that receives once the wall clock has reached
	// t, and a function that releases the timer early. The channel needs
	// room for one value, so that a timer that fires while nobody waits
	// does not block.
	At(t time.Time) (<-chan time.Time, func())
}

// SystemWall is the machine's wall clock.
type SystemWall struct{ streamclock.System }

var _ Wall = SystemWall{}

// At returns a time.Timer's channel and its Stop.
func (SystemWall) At(t time.Time) (<-chan time.Time, func()) {
	tm := time.NewTimer(time.Until(t))
	return tm.C, func() { tm.Stop() }
}
