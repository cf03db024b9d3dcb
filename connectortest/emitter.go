package connectortest

import (
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// Emitter is the engine's side of a sink called directly, without a
// topology: it hands out anchors, counts acknowledgements and records
// failures; what is emitted is dropped. It is not safe for concurrent use.
type Emitter struct {
	next operation.Anchor
	// Checkpointed makes Hold return anchors of a run that takes
	// checkpoints (operation.Anchor.Checkpointed).
	Checkpointed bool
	// Acked counts the Acks; Failed holds the errors of the Fails.
	Acked  int
	Failed []error
}

var _ operation.Emitter = (*Emitter)(nil)

// Emit implements operation.Emitter: it drops p.
func (e *Emitter) Emit(particle.Particle) {}

// EmitAnchored implements operation.Emitter: it drops p.
func (e *Emitter) EmitAnchored(particle.Particle, ...operation.Anchor) {}

// Hold implements operation.Emitter: each call returns a new anchor.
func (e *Emitter) Hold() operation.Anchor {
	e.next++
	if e.Checkpointed {
		return e.next | operation.CheckpointedAnchor
	}
	return e.next
}

// Ack implements operation.Emitter.
func (e *Emitter) Ack(operation.Anchor) { e.Acked++ }

// Fail implements operation.Emitter.
func (e *Emitter) Fail(_ operation.Anchor, err error) { e.Failed = append(e.Failed, err) }

// Held returns how many anchors Hold handed out.
func (e *Emitter) Held() int { return int(e.next) }
