// Package state is the codec of operation state: the compact binary form in
// which an operation writes what it keeps between particles (open windows,
// per-key accumulators, timers) into a checkpoint, and reads it back at
// restore.
//
// A [Writer] appends unsigned and signed varints, counts, float64 values
// as their bits, booleans, length-prefixed bytes and strings, and the
// tags and fields of particles to a buffer; a [Reader] reads them back in
// the same order. [PutMap] writes a map in the order of its keys, so that
// the same state gives the same bytes, and [ReadMap] reads it. The form
// carries no field names or type descriptors: reader and writer agree on
// the order, and an operation that changes its form writes a version
// first (operation.CheckVersion reads it back).
//
// A Reader never panics on bad bytes: its first error (truncated input, a
// varint that overflows, a boolean other than 0 or 1) sticks, names the
// offset as a [*DecodeError], and every later read returns a zero value,
// so a decoder checks [Reader.Err] once at the end.
//
// A type that encodes values of another type implements [Codec]: the
// window operation of package operation uses an Aggregator's Codec for
// its accumulators, and encoding/gob for those of an Aggregator without
// one.
//
// # What it is not
//
// Not a general serialization format: no schema, no self-description, no
// evolution beyond the version an operation writes itself. Not storage:
// package checkpoint stores the bytes, checksums them and fsyncs them.
// Not safe for concurrent use.
//
// See DESIGN.md, "Checkpoints and exactly-once output", "Operations
// declare state".
package state
