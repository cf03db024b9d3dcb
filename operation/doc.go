// Package operation defines what users write: the code a bolt instance runs
// on each particle released by its synchronization buffer, in event-time
// order.
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
// progress (closing windows), [TickHandler] for the passing of stream time,
// and [Flusher] for the end of the stream.
package operation
