package particle

import (
	"fmt"
	"strconv"
	"time"
)

// Precision is the unit of timestamps in line-protocol text. The zero value
// is Nanosecond.
type Precision uint8

// The precisions of line protocol; their values match those of
// github.com/influxdata/line-protocol/v2/lineprotocol.
const (
	Nanosecond Precision = iota
	Microsecond
	Millisecond
	Second
)

var precisionNames = [...]string{"ns", "us", "ms", "s"}

// String returns "ns", "us", "ms" or "s".
func (p Precision) String() string {
	if p.valid() {
		return precisionNames[p]
	}
	return "Precision(" + strconv.Itoa(int(p)) + ")"
}

// ParsePrecision parses "ns", "us", "ms" or "s". It also accepts "µs", and
// "n" and "u" as InfluxDB 1.x spells them.
func ParsePrecision(s string) (Precision, error) {
	switch s {
	case "ns", "n":
		return Nanosecond, nil
	case "us", "µs", "u":
		return Microsecond, nil
	case "ms":
		return Millisecond, nil
	case "s":
		return Second, nil
	}
	return 0, fmt.Errorf("%w %q", ErrUnknownPrecision, s)
}

// MarshalText returns the text of p.String, or an error for an unknown
// precision.
func (p Precision) MarshalText() ([]byte, error) {
	if !p.valid() {
		return nil, fmt.Errorf("%w %d", ErrUnknownPrecision, p)
	}
	return []byte(precisionNames[p]), nil
}

// UnmarshalText sets p from text accepted by ParsePrecision.
func (p *Precision) UnmarshalText(text []byte) error {
	q, err := ParsePrecision(string(text))
	if err != nil {
		return err
	}
	*p = q
	return nil
}

func (p Precision) valid() bool { return p <= Second }

// Duration returns the length of p's unit: time.Nanosecond for
// Nanosecond, ..., time.Second for Second; 0 for an unknown precision.
func (p Precision) Duration() time.Duration {
	if !p.valid() {
		return 0
	}
	return time.Duration(precisionUnits[p])
}
