// Package operation defines what users write: the code a bolt instance runs
// on each particle released by its synchronization buffer, in event-time
// order, and the built-in operations sensor users expect.
//
// An Operation gets one data particle at a time and emits zero or more
// particles. Emits during Process are anchored to the input, and the input
// is acknowledged when Process returns nil and failed when it returns an
// error or panics, so most operations never think about acking. Operations
// that keep particles past Process (windows, joins) call Hold and later
// EmitAnchored, Ack or Fail.
//
// Optional interfaces add abilities the engine detects at run time:
// [MetaHandler] for meta particles, [WatermarkHandler] for event-time
// progress (closing windows), [TickHandler] for the stream clock's
// progress (timers, eviction of idle state), [Flusher] for the end of
// the stream and [Snapshotter] for state kept across checkpoints.
//
// # State and checkpoints
//
// Every built-in operation that keeps state between particles snapshots
// it and restores it ([Snapshotter]), in the compact codec of package
// state: windows ([Aggregate], [Batch], [TypedBatch], [NewStats]) their
// open windows and accumulators, [NewAlign] its open buckets, [PerKey]
// its live keys and each key's operation, [NewDedup] the identities it
// remembers, [NewResample] each series' latest reading and next point,
// and [NewThreshold] and [NewRateOfChange] each sensor's alert state.
// [Timers] snapshot themselves for the operations that keep them. The
// others ([NewFilter], [Typed]) keep none. When the run takes
// checkpoints, [Emitter.Hold] returns checkpointed anchors
// ([Anchor.Checkpointed]) and the engine acknowledges held inputs once a
// checkpoint holds their effect: a window then keeps one anchor per
// window, its newest input's, not one per input. [Collector.Checkpoints]
// tests an operation that way.
//
// # Batches and windows
//
// A [Batcher] cuts a stream into windows: [Tumbling] and [Sliding] windows
// in event time, [Session] windows per key and [Count] windows. [Aggregate]
// folds each window and group into an accumulator of any type; [Batch]
// hands over the window's particles; [TypedBatch] decoded values. Time
// windows close when the watermark passes their end, never on the wall
// clock, so a replay at any speed cuts the same windows as the live run.
// Every particle in an open window is held: its source tree completes only
// once the window's results, anchored to it, were processed.
//
// # Keys and timers
//
// [PerKey] keeps one operation per key in each bolt instance, made on
// demand and evicted after a time to live measured on the watermark and
// the stream clock, so a million keys passing through cost only the keys
// alive. [Timers] holds any number of timers per key in event time
// (advanced by the watermark) and in stream time (advanced by the stream
// clock's ticks, [TickHandler]).
//
// # Built-ins
//
// [NewStats] (mean, min, max, count, sum, stddev, percentiles per window),
// [NewThreshold] and [NewRateOfChange] (alerts), [NewDedup] (repeated
// packets), [NewResample] (fixed interval, last value or linear),
// [NewAlign] (several sensors merged into one particle per time bucket)
// and [NewFilter] (tags, fields and measurements).
//
// [Typed] wraps a function on a Go type with decode and encode functions:
// typed code without reflection on the hot path.
//
// This package does not run anything: the topology package drives
// operations. [Collector] stands in for the engine in tests.
package operation
