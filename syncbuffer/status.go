package syncbuffer

import (
	"fmt"
	"strconv"
)

// Status is how [Buffer.Push] classified an item.
type Status uint8

const (
	// Buffered means the item is stored and will be released in order.
	Buffered Status = iota
	// Late means a data item is older than its input's high-water mark
	// minus the window, or a meta copy is older than the deduplication
	// horizon. It is not stored.
	Late
	// Invalid means the item is too far ahead of the stream clock
	// (Config.FutureBound). It is not stored and does not count as a sign
	// of life from its input.
	Invalid
	// Duplicate means the item is a meta item whose identity was already
	// seen. It is not stored.
	Duplicate
	// Behind means the item is not late for its input, but older than an
	// item already released: the watermark passed it while its input was
	// idle, or its input broke its promise. It is not stored; a Behind meta
	// item is new and is to be handled at once.
	Behind
)

var statusNames = [...]string{
	Buffered:  "buffered",
	Late:      "late",
	Invalid:   "invalid",
	Duplicate: "duplicate",
	Behind:    "behind",
}

// String returns the lower-case name of s.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// LatePolicy is what a caller does with Late items. The buffer does not act
// on it; it carries the configured policy to the caller.
type LatePolicy uint8

const (
	// LateDrop drops late items and counts them.
	LateDrop LatePolicy = iota
	// LateSide routes late items to a side output.
	LateSide
	// LatePass passes late items on unordered.
	LatePass
)

var latePolicyNames = [...]string{
	LateDrop: "drop",
	LateSide: "side",
	LatePass: "pass",
}

// String returns the policy's name as accepted by [ParseLatePolicy].
func (p LatePolicy) String() string {
	if int(p) < len(latePolicyNames) {
		return latePolicyNames[p]
	}
	return "LatePolicy(" + strconv.Itoa(int(p)) + ")"
}

// ParseLatePolicy returns the policy named s: "drop", "side" or "pass".
// Any other name gives an error wrapping [ErrUnknownLatePolicy].
func ParseLatePolicy(s string) (LatePolicy, error) {
	for p, name := range latePolicyNames {
		if s == name {
			return LatePolicy(p), nil
		}
	}
	return 0, fmt.Errorf("%w %q", ErrUnknownLatePolicy, s)
}

// MarshalText implements [encoding.TextMarshaler].
func (p LatePolicy) MarshalText() ([]byte, error) {
	if int(p) >= len(latePolicyNames) {
		return nil, fmt.Errorf("%w %d", ErrUnknownLatePolicy, uint8(p))
	}
	return []byte(latePolicyNames[p]), nil
}

// UnmarshalText implements [encoding.TextUnmarshaler] (YAML, flags) with
// [ParseLatePolicy].
func (p *LatePolicy) UnmarshalText(text []byte) error {
	v, err := ParseLatePolicy(string(text))
	if err != nil {
		return err
	}
	*p = v
	return nil
}
