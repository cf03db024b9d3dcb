package connectortest

import (
	"context"
	"slices"
	"sync"

	"github.com/sensorstorm/sensorstorm/topology"
)

// DeadLetters is a topology.DeadLetterSink that keeps what it is given,
// for tests to look at. The zero DeadLetters is ready; it is safe for
// concurrent use.
type DeadLetters struct {
	mu      sync.Mutex
	letters []topology.DeadLetter
}

var _ topology.DeadLetterSink = (*DeadLetters)(nil)

// DeadLetter implements topology.DeadLetterSink.
func (d *DeadLetters) DeadLetter(_ context.Context, l topology.DeadLetter) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.letters = append(d.letters, l)
}

// All returns the dead letters so far, in the order they came.
func (d *DeadLetters) All() []topology.DeadLetter {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.letters)
}
