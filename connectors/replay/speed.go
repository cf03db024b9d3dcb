package replay

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sensorstorm/sensorstorm/streamclock"
)

// Speed is a replay speed: a factor of the recording's pace, from
// streamclock.MinSpeed (0.01, a hundred times slower) to
// streamclock.MaxSpeed (10000), or Max.
type Speed float64

// Max replays as fast as downstream takes the particles, unpaced.
const Max = Speed(streamclock.Unpaced)

// ParseSpeed parses "max", or a factor such as "10", "0.5" or "100x".
func ParseSpeed(s string) (Speed, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	if t == "max" {
		return Max, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(t, "x"), 64)
	if err != nil {
		return 0, fmt.Errorf("%w %q: want a factor such as 10 or 0.5, or max", ErrInvalidSpeed, s)
	}
	sp := Speed(f)
	if err := sp.Validate(); err != nil {
		return 0, err
	}
	return sp, nil
}

// Validate reports a speed outside [streamclock.MinSpeed,
// streamclock.MaxSpeed] that is not Max.
func (s Speed) Validate() error {
	if err := streamclock.ValidSpeed(float64(s)); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSpeed, err)
	}
	return nil
}

// String returns "max" or the factor followed by "x", such as "10x".
func (s Speed) String() string {
	if s == Max {
		return "max"
	}
	return strconv.FormatFloat(float64(s), 'g', -1, 64) + "x"
}

// MarshalText implements encoding.TextMarshaler with String.
func (s Speed) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseSpeed.
func (s *Speed) UnmarshalText(b []byte) error {
	sp, err := ParseSpeed(string(b))
	if err != nil {
		return err
	}
	*s = sp
	return nil
}
