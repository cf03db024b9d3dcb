// Package acker tracks the tuple trees of sensorstorm's guaranteed
// processing, the XOR acking of Apache Storm.
//
// Every data particle a source emits is the root of a tree: the particles
// that operations emit anchored to it, their children, and so on. Each edge
// of a tree (an anchored emission) gets a random 64-bit id, see [EdgeIDs].
// The acker keeps one 64-bit value per root, the xor of the edge ids seen so
// far: an edge id is xored in when the edge is emitted and again when its
// particle is acked, so the value returns to zero exactly when every emitted
// particle has been acked, whatever the order, in 8 bytes of state and
// without knowing the tree's shape. A value may reach zero early only if
// random ids cancel out, with probability 2^-64 per update.
//
// A [Table] holds the pending roots, identified by a [RootID] that is
// unique by construction (slot and generation), so stale acks for finished
// trees are recognised and dropped. It fails a tree with a [Reason] when it
// makes no progress for a while ([Timeout]) or gets too old ([Expired]);
// progress is measured on a clock the engine pauses under backpressure, so
// trees that merely wait in queues do not time out and cause replay storms.
// A pending tree costs 16 bytes, less than the 20 of Storm's design figure.
//
// The package is the bookkeeping core, not the acker service: a Table is
// owned by a single goroutine (the engine's), which receives batched ack
// operations, keeps the source messages in side tables indexed by
// [RootID.Slot], calls [Table.Expire] periodically and reports outcomes to
// the sources; retry and dead-lettering are decided there too.
//
// See DESIGN.md, "Guaranteed processing (XOR acker)".
package acker
