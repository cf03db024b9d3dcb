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
	// ErrStopped is returned by emits after the topology stopped.
	ErrStopped = errors.New("topology: stopped")
)

// PanicError is the error of an operation that panicked.
type PanicError struct {
	Component string
	Value     any
	Stack     []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("topology: %s panicked: %v", e.Component, e.Value)
}
