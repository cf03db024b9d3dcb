package operation

import (
	"github.com/sensorstorm/sensorstorm/particle"
)

// Collector is an Emitter that records what an operation emits, for tests
// of operations and for embedding an operation outside a topology. Held
// anchors are numbered from 1; acks and fails are recorded by anchor.
type Collector struct {
	// Emitted holds every particle emitted, in order.
	Emitted []particle.Particle
	// Acked and Failed record the anchors acknowledged and failed.
	Acked  []Anchor
	Failed map[Anchor]error
	// Checkpoints makes Hold return checkpointed anchors (see
	// [Anchor.Checkpointed]), as the engine's Hold does when the run takes
	// checkpoints, to test an operation in such a run. Reset keeps it.
	Checkpoints bool

	held Anchor
}

var _ Emitter = (*Collector)(nil)

// Emit records p.
func (c *Collector) Emit(p particle.Particle) { c.Emitted = append(c.Emitted, p) }

// Hold returns the next anchor number, marked with CheckpointedAnchor
// when Checkpoints is set.
func (c *Collector) Hold() Anchor {
	c.held++
	if c.Checkpoints {
		return c.held | CheckpointedAnchor
	}
	return c.held
}

// EmitAnchored records p.
func (c *Collector) EmitAnchored(p particle.Particle, _ ...Anchor) { c.Emit(p) }

// Ack records a.
func (c *Collector) Ack(a Anchor) { c.Acked = append(c.Acked, a) }

// Fail records a and err.
func (c *Collector) Fail(a Anchor, err error) {
	if c.Failed == nil {
		c.Failed = make(map[Anchor]error)
	}
	c.Failed[a] = err
}

// Reset forgets everything recorded.
func (c *Collector) Reset() { *c = Collector{Checkpoints: c.Checkpoints} }
