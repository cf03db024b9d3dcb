package topology

import "sync/atomic"

// ComponentStats counts what one source or bolt did, summed over its
// instances. The counters are safe to read while the topology runs.
type ComponentStats struct {
	// In counts particles received; Out particles emitted.
	In, Out atomic.Uint64
	// Processed counts data particles given to the operation.
	Processed atomic.Uint64
	// Meta counts meta particles handled and forwarded; Duplicates the
	// extra copies that were dropped.
	Meta, Duplicates atomic.Uint64
	// Late counts particles older than what was already released, handled
	// by the late policy; Invalid counts bad input.
	Late, Invalid atomic.Uint64
	// Errors counts inputs the operation failed; Panics those it panicked
	// on.
	Errors, Panics atomic.Uint64
	// Acked, Failed, Replayed and DeadLettered count a source's trees:
	// completed, failed (each attempt), emitted again, and given up.
	Acked, Failed, Replayed, DeadLettered atomic.Uint64
	// Watermark is the highest watermark of any instance, in ns.
	Watermark atomic.Int64
}
