package topology

import (
	"sync/atomic"

	"github.com/sensorstorm/sensorstorm/acker"
)

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
	// Late counts data particles older than their input's high-water mark
	// minus the window; Behind those older than what was already released
	// after an idle input stopped holding the watermark back. Both are
	// handled by the late policy. Invalid counts bad input.
	Late, Behind, Invalid atomic.Uint64
	// FullBuffers counts the times an instance's sync buffer filled up and
	// the instance stopped taking input.
	FullBuffers atomic.Uint64
	// Errors counts inputs the operation failed; Panics those it panicked
	// on; DestinationRetries the calls retried because their destination
	// failed.
	Errors, Panics, DestinationRetries atomic.Uint64
	// Acked, Failed, Retried and DeadLettered count a source's trees:
	// completed, failed (each attempt), emitted again, and given up.
	// DeadLettered also counts a bolt's untracked inputs that its
	// operation failed, which are dead-lettered at once: together, what
	// the topology's bolts refused for good.
	Acked, Failed, Retried, DeadLettered atomic.Uint64
	// FailedBy counts a source's failed attempts by reason, indexed by
	// acker.Reason.
	FailedBy [acker.Shutdown + 1]atomic.Uint64
	// Ended counts the bolt instances that ended their streams: every
	// input ended, the buffer flushed, end of stream sent on.
	Ended atomic.Uint64
	// Watermark is the highest watermark of any instance, in ns.
	Watermark atomic.Int64
	// Buffered is the number of particles held in the instances' sync
	// buffers now; BufferedBytes their estimated size.
	Buffered, BufferedBytes atomic.Int64
}

// AckStats describes the acker of a running topology.
type AckStats struct {
	// Pending is the number of trees not finished yet; MaxPending the
	// bound on them, AckingConfig.MaxPending per source instance.
	Pending, MaxPending int
	// Stale counts acks and fails for trees that had already finished.
	Stale uint64
}

// AckStats returns the acker's figures; zero when acking is off or the
// topology is not running.
func (t *Topology) AckStats() AckStats {
	r := t.current.Load()
	if r == nil || r.acks == nil {
		return AckStats{}
	}
	a := r.acks
	a.mu.Lock()
	defer a.mu.Unlock()
	return AckStats{Pending: a.table.Len(), MaxPending: r.cfg.Acking.MaxPending * len(r.sources), Stale: a.stale.Load()}
}
