package operation

import (
	"context"
	"fmt"
	"time"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// Operation processes one data particle.
//
// Process is called by one goroutine at a time per operation value; each bolt
// instance has its own value (see [Factory]). The particle's tag and field
// slices are shared with other consumers: copy before modifying (see
// particle.Particle.Clone). Returning an error fails the input's tree; a
// panic is recovered and does the same.
type Operation interface {
	Process(ctx context.Context, in particle.Particle, out Emitter) error
}

// Func adapts a function to an Operation.
type Func func(ctx context.Context, in particle.Particle, out Emitter) error

// Process calls f.
func (f Func) Process(ctx context.Context, in particle.Particle, out Emitter) error {
	return f(ctx, in, out)
}

// Factory makes the operation of one bolt instance.
type Factory func() Operation

// Stateless returns a Factory that shares op among all instances, for
// operations that keep no state.
func Stateless(op Operation) Factory {
	return func() Operation { return op }
}

// FactoryOf returns a Factory of operations made by newOp from cfg, for
// constructors that check a config, such as the built-ins of package ops
// (ops.NewStats, ops.NewAlign, ...): it makes one operation first and
// returns its error, so that the Factory, which cannot return one, makes
// the rest from a config already accepted. newOp
// must refuse a config at once or never: the Factory panics if it refuses
// one it accepted.
func FactoryOf[C any](newOp func(C) (Operation, error), cfg C) (Factory, error) {
	if _, err := newOp(cfg); err != nil {
		return nil, err
	}
	return func() Operation {
		op, err := newOp(cfg)
		if err != nil {
			panic(fmt.Sprintf("operation: a config accepted before was refused: %v", err))
		}
		return op
	}, nil
}

// Anchor is a handle on a held input, given by [Emitter.Hold].
type Anchor uint64

// CheckpointedAnchor marks the anchors Hold returns when the run takes
// checkpoints (see [Anchor.Checkpointed]).
const CheckpointedAnchor Anchor = 1 << 63

// Checkpointed reports whether the engine acknowledges the anchor's input
// itself, once the checkpoint holding its effect (the operation's state)
// completes: the run takes checkpoints. The operation then keeps such an
// anchor only for the identity of what it derives from the input (a
// particle emitted anchored to several inputs is derived from the newest
// of them), not to acknowledge it: an operation that folds many inputs
// into one result keeps the newest anchor and may Ack the others at once,
// so that its memory is its state, not one anchor per input. A particle
// emitted anchored to such anchors is not tracked: after a failure, a
// restore derives it again.
func (a Anchor) Checkpointed() bool { return a&CheckpointedAnchor != 0 }

// Emitter receives what an operation produces.
//
// The engine's Emitter is valid only in the goroutine that called the
// operation, during the call.
type Emitter interface {
	// Emit sends p downstream, anchored to the input being processed.
	Emit(p particle.Particle)
	// Hold keeps the input being processed pending after Process returns:
	// it is neither acknowledged nor failed until Ack or Fail is called on
	// the returned Anchor, or, when the run takes checkpoints, until the
	// next checkpoint completes (see [Anchor.Checkpointed]).
	Hold() Anchor
	// EmitAnchored sends p downstream anchored to held inputs, which may
	// belong to different source trees; none of them completes before p is
	// processed.
	EmitAnchored(p particle.Particle, anchors ...Anchor)
	// Ack acknowledges a held input; a second Ack or Fail is a no-op.
	Ack(a Anchor)
	// Fail fails a held input's tree with err; a second Ack or Fail is a
	// no-op. An err wrapping ErrRejected dead-letters and acknowledges the
	// input instead, as from Process.
	Fail(a Anchor, err error)
}

// Wrapper is implemented by operations that wrap another, such as a
// middleware that recovers from panics or measures. The engine finds an
// operation's optional interfaces (MetaHandler, WatermarkHandler,
// OutputHolder, TickHandler, Flusher, Snapshotter, Spanner) once, on the
// operation it was given: a wrapper implements each one of what it wraps,
// forwarding to it, and topology refuses to run a bolt whose wrapper hides
// one.
type Wrapper interface {
	Unwrap() Operation
}

// MetaHandler is implemented by operations that react to meta particles
// (ticks, speed changes, user-defined ones). Particles emitted are not
// anchored. The engine forwards every meta particle downstream after the
// handler returns, whatever it returns.
type MetaHandler interface {
	HandleMeta(ctx context.Context, m particle.Particle, out Emitter) error
}

// WatermarkHandler is implemented by operations that act on event-time
// progress, such as windows closed by the watermark. OnWatermark is called
// after the particles at or below the watermark have been processed.
type WatermarkHandler interface {
	OnWatermark(ctx context.Context, watermark int64, out Emitter) error
}

// OutputHolder is implemented by operations that may emit particles
// stamped earlier than the input that makes them emit: a window result
// stamped with the window's start, a resampled point between two readings.
// Operations that do not implement it must not emit earlier than their
// input.
//
// The engine forwards to downstream instances a watermark (a promise that
// nothing at or below it will come); it never passes the operation's hold,
// so that no result is made late by it. OutputHold returns the earliest
// event time the operation may still emit, once every input at or below
// watermark has been processed and only later inputs can come:
// math.MaxInt64 when it holds nothing. It is called after OnWatermark, from
// the instance's goroutine.
type OutputHolder interface {
	OutputHold(watermark int64) int64
}

// Spanner is implemented by operations that hold their inputs for a span
// of event time before they emit, such as windows. The engine's timeouts
// for a tree outlast the longest span (see topology.AckingConfig).
type Spanner interface {
	Span() time.Duration
}

// TickHandler is implemented by operations that act on the passing of
// stream time: processing-time timers, eviction of idle state. OnTick is
// called about every housekeeping interval (topology.Config) with the
// run's stream-clock time, which in a replay runs at the replay speed and
// stands still while it is paused. Particles emitted are not anchored.
type TickHandler interface {
	OnTick(ctx context.Context, now int64, out Emitter) error
}

// Flusher is implemented by operations that hold state to emit at the end of
// the stream, after the last particle was processed.
type Flusher interface {
	Flush(ctx context.Context, out Emitter) error
}

// Snapshotter is implemented by operations that keep state between
// particles: windows ([Aggregate], [Batch], [TypedBatch]), [PerKey], the
// stateful built-ins of package ops and user operations that keep any
// ([Timers] snapshot themselves for them; [CheckVersion] checks the
// version a snapshot starts with). At a
// checkpoint the engine calls Snapshot between two particles; at restore
// it calls Restore on a new operation made by the same Factory, before
// any particle. An operation that does not implement it must keep no
// state: after a restore it starts empty.
//
// Inputs held with [Emitter.Hold] are not part of a snapshot: with
// checkpoints the engine acknowledges them once the checkpoint holding
// their effect is complete (DESIGN.md, "Acknowledging at checkpoints").
// The [Anchor.Checkpointed] anchors an operation keeps for the identity
// of what it derives are: the engine restores their identities, and a
// restored operation that keeps them derives what it did before.
type Snapshotter interface {
	// Snapshot writes the operation's state to w.
	Snapshot(w *state.Writer) error
	// Restore reads a state written by Snapshot from r into an operation
	// that has processed nothing. An error leaves it unusable.
	Restore(r *state.Reader) error
}

// Committer is implemented by Snapshotters whose effect outside the run
// must wait for the checkpoint that holds it: a sink that cannot take back
// what it wrote (an MQTT broker) keeps it in its snapshot and writes it
// once Committed says the checkpoint is complete, so that a restore
// neither loses it nor writes it twice.
type Committer interface {
	// Committed tells that a checkpoint holding every snapshot the
	// operation took before is complete: checkpoints that failed are
	// covered by the next one to complete. It is called from the run's
	// checkpoint goroutine, concurrently with the instance's calls, once
	// per instance the operation serves, and must not block.
	Committed()
}
