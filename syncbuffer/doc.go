// Package syncbuffer implements the event-time buffer that fronts every bolt
// instance: it takes items from several upstream inputs in arrival order and
// releases them in event-time order.
//
// # Order
//
// Items are released in [Key] order: event time, then origin, then sequence
// number; items with equal keys leave in arrival order. The order never
// depends on pointers or hashes, so the same pushes always give the same
// output. Output never goes backwards in event time: an item older than the
// last released item is classified [Late] and not stored.
//
// # Watermark
//
// Each input has a high-water mark, the highest event time it has delivered.
// The watermark is the minimum high-water mark over active inputs minus
// [Config.Window], the bounded out-of-orderness. Items at or below the
// watermark are released. An input is active until it ends
// ([Buffer.EndOfStream]) or has shown no sign of life for
// [Config.IdleTimeout] of stream-clock time; an active input that has sent
// nothing yet holds everything back. When every input is idle, the buffer
// releases up to the highest high-water mark minus the window; when every
// input has ended, it flushes everything.
//
// Time is never read from the system: every call that depends on it takes
// the stream clock's current time, so a replay at any speed behaves like the
// live run.
//
// # Bad input
//
// An item more than [Config.FutureBound] ahead of the stream clock is
// [Invalid]: it is neither stored nor allowed to raise its input's
// high-water mark, so one sensor with a broken clock cannot make everything
// else late.
//
// # Meta particles
//
// A meta item's identity is its (Origin, Seq). The buffer receives one copy
// per upstream input and releases each identity once; later copies are
// [Duplicate], also after the first was released. Identities are remembered
// until the watermark has passed them by [Config.MetaRetention]; a copy
// older than that horizon is Late, so an identity is never released twice.
//
// # Memory and speed
//
// The order lives in a github.com/google/btree B-tree of 32-byte,
// pointer-free entries (key, arrival counter, slot); the items themselves sit
// by value in a slot slice next to it. Per item held, a buffer takes about
// 50 bytes beyond the item itself. The slots keep their peak size until the
// buffer empties, then give it back. In the steady state a push and its
// release allocate nothing, and an in-order stream with no window passes
// through without touching the tree.
//
// # What it is not
//
// The buffer classifies; it does not act. What happens to Late, Invalid and
// Duplicate items (drop, side output, pass through, ack or fail) is the
// caller's decision; [Config.Late] only carries the configured
// [LatePolicy] to it. The buffer knows nothing about particles or the engine:
// it is generic in the item type and reads keys through a function given to
// [New]. It is not safe for concurrent use.
//
// See DESIGN.md, "Time and order", "Watermarks and the window", "Late data"
// and "Meta particles".
package syncbuffer
