// Package syncbuffer implements the event-time buffer that fronts every bolt
// instance: it takes items from several upstream inputs in arrival order and
// releases them in event-time order.
//
// # Order
//
// Items are released in [Key] order: event time, then origin, then sequence
// number; items with equal keys leave in arrival order. The order never
// depends on pointers or hashes, so the same pushes always give the same
// output. Output never goes backwards: an item that would be released
// behind an item already released is classified [Behind] and not stored.
//
// # Lateness
//
// Lateness is decided by the item's own input, never by timing. Each input
// has a high-water mark, the newest event time it has sent; every item
// carries the mark its input had when it sent it ([Key.High]). A data item
// older than that mark minus [Config.Window], the bounded out-of-orderness
// the user allowed, is [Late]. So the same inputs classify the same items
// as late however their batches interleave.
//
// # Watermark
//
// Besides items, an input may announce its progress ([Buffer.Advance]):
// its high-water mark, and a promise that nothing at or below a time will
// follow (the forwarded watermark of an upstream bolt instance). The
// watermark is the lowest bound over active inputs, an input's bound being
// its high-water mark minus the window minus one, or its promise if that is
// higher. Items at or below the watermark are released. Since an item that
// is not late is never below its input's bound, the watermark never passes
// it: everything not late comes out in key order, whatever the timing.
//
// An input is active until it ends ([Buffer.EndOfStream]) or has shown no
// sign of life for [Config.IdleTimeout] of stream-clock time; an active
// input that has neither sent nor promised anything holds everything back.
// When every input is idle, event time advances from the newest event by the
// stream-clock time that passed since the last sign of life, less the idle
// timeout, so that a quiet live feed's last items come out while a feed of
// old data paused for a while is not made late by the pause.
// Idleness is the one way timing enters the output: a run that must be a
// function of its data (a replay) disables it and relies on announced
// progress and end of stream. When every input has ended, the buffer
// flushes everything.
//
// Time is never read from the system: every call that depends on it takes
// the stream clock's current time.
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
// Meta items are exempt from lateness: a new identity behind what was
// released is Behind, for the caller to handle at once.
//
// # Memory and speed
//
// Each item goes to one of three indexes as it arrives; Release merges
// them, and which one holds an item never changes the order. An item
// that follows its input's previous one joins that input's run, a queue
// that needs no sorting (with up to eight inputs). An item out of order
// within the window goes to a time bucket: the window's span of event
// time is cut into 64 buckets, an item is appended to its bucket
// unsorted, and a bucket is sorted only once the watermark reaches it
// (spread by time over small ranges in one pass, then each range
// sorted). So a disordered stream costs an append per item and a sort per
// bucket, not a search among every item held. A bucket's items lie
// together in chunks of 32, written in sequence and copied out in release
// order a batch of 128 at a time, so that a release seldom waits on
// memory; a chunk keeps each item's arrival counter and size, and the key
// is read from the item again when its bucket is sorted. The rest (items
// older than the bucket being released, more than three windows ahead, or
// beyond 65536 in one bucket) go to a github.com/google/btree B-tree of
// 32-byte, pointer-free entries (key, arrival counter, slot).
//
// Items sit by value next to their index: in a bucket's chunks, or in
// slots in pages of 1024 for the runs and the tree; a run's entries lie
// in blocks of 256. None of them moves or copies an item or entry as it
// grows. Per item held, a buffer takes 8 bytes beyond the item itself in
// a bucket, and about 40 in a run or the tree. A new item in a slot takes
// the lowest free slot, so that once a burst's items are released the
// last pages are empty and given back (beyond twice the pages in use),
// also while the buffer goes on holding a steady stream; a run keeps 16
// drained blocks and gives back the rest, and a released bucket's chunks
// are kept for new buckets only as long as the buckets hold as many
// items. In the steady state a push and its release allocate nothing, and
// an in-order stream passes through without sorting anything.
//
// # Snapshots
//
// For checkpoints, [Buffer.Snapshot] writes, with a [state.Writer], all
// that the buffer's future behaviour depends on: each input's high-water
// mark, promise, last sign of life and end, the key of the newest item
// released, the meta identities remembered and their horizon, the
// counters, and the items held, in release order, with their keys, each
// written by the caller's encoder. [Buffer.Restore] reads it into a new
// buffer of the same configuration, which then classifies, releases and
// computes watermarks exactly as the original would have. What is written
// does not depend on which index holds an item, so a restored buffer
// writes the same snapshot as its original.
//
// # What it is not
//
// The buffer classifies; it does not act. What happens to Late, Invalid and
// Duplicate items (drop, side output, pass through, ack or fail) is the
// caller's decision; [Config.Late] only carries the configured
// [LatePolicy] to it. It does not stop its owner from pushing:
// [Buffer.Full] says when the owner should stop taking input. The buffer
// knows nothing about particles or the engine: it is generic in the item
// type and reads keys through a function given to [New], and its items
// through the encoder and decoder given to Snapshot and Restore. It does
// not decide when to snapshot or keep snapshots: the engine and package
// checkpoint do. It is not safe for concurrent use.
//
// See the repository's DESIGN.md, "Time and order", "Watermarks and the
// window", "Late data", "Meta particles" and "Checkpoints and
// exactly-once output".
package syncbuffer
