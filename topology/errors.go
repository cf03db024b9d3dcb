package topology

import (
	"errors"
	"fmt"
)

// Errors returned by Run and by emitters.
var (
	// ErrDrainTimeout is returned by Run when draining after cancellation
	// took longer than Config.DrainTimeout; what was still queued is lost
	// to this run (and replayed by sources that track acknowledgements).
	ErrDrainTimeout = errors.New("topology: drain timed out")
	// ErrInvalidTopology wraps every problem found in the graph.
	ErrInvalidTopology = errors.New("topology: invalid topology")
	// ErrGaveUp is returned by Run when a destination failed for longer
	// than Config.Destination.GiveUpAfter: the run stopped at once, and
	// what it had not finished was neither acknowledged nor dead-lettered.
	ErrGaveUp = errors.New("topology: gave up on a failing destination")
	// ErrStopped is returned by emits after the topology stopped.
	ErrStopped = errors.New("topology: stopped")
	// ErrNotAcknowledger is returned by EmitTracked from a source that
	// does not implement Acknowledger, and so cannot redeliver.
	ErrNotAcknowledger = errors.New("topology: tracked emit from a source that is not an Acknowledger")
)

// PanicError is the error of an operation that panicked.
type PanicError struct {
	Component string
	Value     any
	Stack     []byte
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("topology: %s panicked: %v", e.Component, e.Value)
}
