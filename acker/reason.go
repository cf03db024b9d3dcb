package acker

import "strconv"

// Reason says why a tree failed. The zero Reason is not a valid reason.
type Reason uint8

// Reasons a tree fails. The table itself only produces [Timeout] and
// [Expired]; the engine reports the others to the source.
const (
	// Failed: an operation failed its input explicitly.
	Failed Reason = iota + 1
	// Panic: an operation panicked on its input.
	Panic
	// Timeout: the tree made no progress within Config.ProgressTimeout.
	Timeout
	// Expired: the tree reached Config.HardTimeout, progress or not.
	Expired
	// Rejected: bad input, or late data dropped under a fail policy.
	Rejected
	// Shutdown: the pipeline stopped before the tree completed.
	Shutdown
)

var reasonNames = [...]string{
	Failed:   "failed",
	Panic:    "panic",
	Timeout:  "timeout",
	Expired:  "expired",
	Rejected: "rejected",
	Shutdown: "shutdown",
}

// String returns the reason's lower-case name, "unspecified" for the
// zero Reason, or "Reason(n)" for an unknown value.
func (r Reason) String() string {
	if r == 0 {
		return "unspecified"
	}
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}
