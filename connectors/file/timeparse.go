package file

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// timeLayout is a parsed TimeConfig.Layout.
type timeLayout struct {
	layout string // a Go layout, or "" for epoch and auto
	unit   int64  // nanoseconds per epoch unit; 0 for auto and Go layouts
	auto   bool
}

// autoLayouts are tried in order by LayoutAuto for text that is not a
// number.
var autoLayouts = [...]string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
}

func parseLayout(s string) (timeLayout, error) {
	switch s {
	case LayoutAuto:
		return timeLayout{auto: true}, nil
	case "s":
		return timeLayout{unit: int64(time.Second)}, nil
	case "ms":
		return timeLayout{unit: int64(time.Millisecond)}, nil
	case "us", "µs":
		return timeLayout{unit: int64(time.Microsecond)}, nil
	case "ns":
		return timeLayout{unit: 1}, nil
	case "":
		return timeLayout{}, fmt.Errorf("%w: empty time layout", ErrInvalidFormat)
	}
	return timeLayout{layout: s}, nil
}

// parse returns the time that b gives, in nanoseconds since the epoch.
func (l timeLayout) parse(b []byte, loc *time.Location) (int64, error) {
	switch {
	case l.unit > 0:
		return parseEpoch(b, l.unit)
	case l.auto:
		if isNumber(b) {
			return parseEpoch(b, epochUnit(b))
		}
		for _, layout := range autoLayouts {
			if t, err := time.ParseInLocation(layout, string(b), loc); err == nil {
				return t.UnixNano(), nil
			}
		}
		return 0, errors.New("not an epoch number nor RFC 3339 nor 2006-01-02 15:04:05")
	}
	t, err := time.ParseInLocation(l.layout, string(b), loc)
	if err != nil {
		return 0, err
	}
	return t.UnixNano(), nil
}

// isNumber reports whether b is an optionally signed decimal number.
func isNumber(b []byte) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	digits := 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c != '.':
			return false
		}
	}
	return digits > 0
}

// epochUnit guesses the unit of an epoch number from its integer digits:
// today is 10 digits in seconds, 13 in milliseconds, 16 in microseconds
// and 19 in nanoseconds; the thresholds leave room for centuries.
func epochUnit(b []byte) int64 {
	n := 0
	for _, c := range b {
		if c == '.' {
			break
		}
		if c >= '0' && c <= '9' {
			n++
		}
	}
	switch {
	case n <= 11:
		return int64(time.Second)
	case n <= 14:
		return int64(time.Millisecond)
	case n <= 17:
		return int64(time.Microsecond)
	}
	return 1
}

// parseEpoch parses an optionally signed decimal number of units, with an
// optional fraction, into nanoseconds. Fraction digits finer than a
// nanosecond are dropped.
func parseEpoch(b []byte, unit int64) (int64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("empty epoch time")
	}
	neg := false
	switch b[0] {
	case '-':
		neg = true
		b = b[1:]
	case '+':
		b = b[1:]
	}
	var whole int64
	i, digits := 0, 0
	for ; i < len(b) && b[i] != '.'; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("epoch time: unexpected %q", c)
		}
		if whole > (math.MaxInt64-9)/10 {
			return 0, fmt.Errorf("epoch time out of range")
		}
		whole = whole*10 + int64(c-'0')
		digits++
	}
	if whole > math.MaxInt64/unit {
		return 0, fmt.Errorf("epoch time out of range")
	}
	ns := whole * unit
	if i < len(b) {
		scale := unit
		for _, c := range b[i+1:] {
			if c < '0' || c > '9' {
				return 0, fmt.Errorf("epoch time: unexpected %q", c)
			}
			scale /= 10
			ns += int64(c-'0') * scale
			digits++
		}
		if ns < 0 {
			return 0, fmt.Errorf("epoch time out of range")
		}
	}
	if digits == 0 {
		return 0, fmt.Errorf("epoch time without digits")
	}
	if neg {
		ns = -ns
	}
	return ns, nil
}
