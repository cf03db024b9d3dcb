// Package operation defines what users write: the code a bolt instance runs
// on each particle released by its synchronization buffer, in event-time
// order, and the building blocks to write it with: windows, per-key state,
// timers and the codec of their checkpoints. The built-in operations
// (stats, alerts, dedup, resample, align, filter) are in package ops,
// written with these blocks like any user's.
//
// An operation is one method; a function is one with [Func]:
//
//	celsius := operation.Func(func(ctx context.Context, in particle.Particle, out operation.Emitter) error {
//		v, _ := in.Field("fahrenheit")
//		f, ok := v.Number()
//		if !ok {
//			return fmt.Errorf("%w: no fahrenheit", operation.ErrRejected)
//		}
//		out.Emit(particle.Particle{Time: in.Time, Measurement: "celsius", Tags: in.Tags,
//			Fields: []particle.Field{{Key: "value", Value: particle.Float((f - 32) / 1.8)}}})
//		return nil
//	})
//	topo.AddBolt("celsius", operation.Stateless(celsius), topology.BoltConfig{})
//
// Emits during Process are anchored to the input, and the input is
// acknowledged when Process returns nil and failed when it returns an
// error or panics (dead-lettered for [ErrRejected]), so most operations
// never think about acking. Operations that keep particles past Process
// (windows, joins) call [Emitter.Hold] and later EmitAnchored, Ack or Fail.
//
// Optional interfaces add abilities the engine detects once, on the operation
// it is given: [MetaHandler] for meta particles, [WatermarkHandler] for
// event-time progress, [OutputHolder] for results stamped before their input,
// [TickHandler] for the stream clock's progress, [Flusher] for the end of the
// stream, [Spanner] for how long inputs are held and [Snapshotter] for state
// kept across checkpoints; a [Wrapper] forwards them.
//
// The building blocks:
//
//   - [Batcher]: [Tumbling] and [Sliding] windows in event time, [Session]
//     windows per key, [Count] windows. [Aggregate] folds each window and
//     group into an accumulator of any type, [Batch] hands over the
//     window's particles, [TypedBatch] decoded values. Time windows close
//     when the watermark passes their end, never on the wall clock, so a
//     replay at any speed cuts the same windows as the live run.
//   - [PerKey]: one operation per key, made on demand and evicted after a
//     time to live on the watermark and the stream clock.
//   - [Timers]: timers per key in event time and in stream time.
//   - [Typed]: a function on a Go type between decode and encode functions.
//   - [ByTags] and [AppendKey]: keys from tags or fields.
//   - State: [WriteParticle] and [ReadParticle], [CheckVersion] for the
//     version a snapshot starts with, [ErrStateMismatch] for the snapshot of
//     another configuration; the codec itself is package state. Windows,
//     PerKey and Timers snapshot themselves. With checkpoints, Hold returns
//     [Anchor.Checkpointed] anchors that the engine acknowledges once a
//     checkpoint holds their effect.
//   - [Collector] stands in for the engine in tests.
//
// # What it is not
//
// Not the engine: package topology runs operations, and package stream
// chains the common job. Not the built-ins: package ops holds them, and
// package pipeline names them in YAML files. Nothing here starts a
// goroutine or reads the wall clock.
//
// See DESIGN.md, "Data flow", "Watermarks and the window" and
// "Checkpoints and exactly-once output".
package operation
