package streamclock

import (
	"fmt"
	"math"
	"time"
)

// Unpaced is the speed of a replay that runs as fast as possible.
const Unpaced = math.MaxFloat64

// MinSpeed and MaxSpeed bound a paced replay's speed factor.
const (
	MinSpeed = 0.01
	MaxSpeed = 10000
)

// Clock is a stream clock: it maps wall time to event time in nanoseconds.
//
// A Clock is owned by one goroutine (a bolt instance or a source); it is not
// safe for concurrent use.
type Clock struct {
	wall        Wall
	wallOrigin  time.Time
	eventOrigin int64
	speed       float64
	paused      bool
	highest     int64 // highest observed event time, the time of an unpaced clock
}

// Live returns a clock that is the wall clock.
func Live(w Wall) *Clock {
	return &Clock{wall: w, wallOrigin: w.Now(), eventOrigin: w.Now().UnixNano(), speed: 1}
}

// Replay returns a clock that stands at event time start now and runs at
// speed times the wall clock. Speed Unpaced makes it follow [Clock.Observe].
func Replay(w Wall, start int64, speed float64) (*Clock, error) {
	if err := ValidSpeed(speed); err != nil {
		return nil, err
	}
	return &Clock{wall: w, wallOrigin: w.Now(), eventOrigin: start, speed: speed, highest: start}, nil
}

// ValidSpeed reports an error for a speed outside [MinSpeed, MaxSpeed] that
// is not Unpaced.
func ValidSpeed(speed float64) error {
	if speed == Unpaced || (speed >= MinSpeed && speed <= MaxSpeed) {
		return nil
	}
	return fmt.Errorf("streamclock: speed %g outside [%g, %g] and not unpaced", speed, float64(MinSpeed), float64(MaxSpeed))
}

// Now returns the current event time.
func (c *Clock) Now() int64 {
	if c.speed == Unpaced {
		return c.highest
	}
	if c.paused {
		return c.eventOrigin
	}
	elapsed := c.wall.Now().Sub(c.wallOrigin)
	if c.speed == 1 {
		return c.eventOrigin + int64(elapsed)
	}
	return c.eventOrigin + int64(float64(elapsed)*c.speed)
}

// Observe tells the clock that event time t was seen. It moves an unpaced
// clock forward and is a no-op otherwise.
func (c *Clock) Observe(t int64) {
	if t > c.highest {
		c.highest = t
	}
}

// Speed returns the current speed factor.
func (c *Clock) Speed() float64 { return c.speed }

// Paused reports whether the clock is paused.
func (c *Clock) Paused() bool { return c.paused }

// SetSpeed changes the speed from now on; event time already elapsed is kept.
func (c *Clock) SetSpeed(speed float64) error {
	if err := ValidSpeed(speed); err != nil {
		return err
	}
	c.rebase()
	if speed == Unpaced && c.eventOrigin > c.highest {
		c.highest = c.eventOrigin
	}
	c.speed = speed
	return nil
}

// Pause stops the clock; Resume starts it again where it stopped.
func (c *Clock) Pause() {
	c.rebase()
	c.paused = true
}

// Resume restarts a paused clock.
func (c *Clock) Resume() {
	c.rebase()
	c.paused = false
}

// rebase moves the origin to the present so that a change applies from now on.
func (c *Clock) rebase() {
	now := c.Now()
	c.eventOrigin, c.wallOrigin = now, c.wall.Now()
	if c.speed == Unpaced {
		c.eventOrigin = c.highest
	}
}
