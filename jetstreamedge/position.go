package jetstreamedge

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// An inlet is an edge.Resumer: its unit records at each checkpoint the
// inlet's position, and the inlet acknowledges a message once the engine
// finished it and a checkpoint after it committed, never when a window
// fires. The position is the set of
// stream sequences a restore must not take again: the messages handed to
// the unit before the cut and not acknowledged (a window or the sync
// buffer holds their particles, or their checkpoint is the one being
// taken), those acknowledged since the previous checkpoint (an
// acknowledgement may be lost with the worker), and those of the restored
// checkpoint's that did not come again yet. JetStream delivers the others
// again, in order (see catchUp): exactly what came after the cut. The set
// is bounded by MaxAckPending and what two checkpoint intervals
// acknowledge. The position also holds, per sender, the number it expects
// next: every message of the sender numbered below was handed on before
// the cut, so that the unit's next holder waits for a missing one from
// there (see sequencer) instead of taking the first it receives for the
// sender's start.
var _ edge.Resumer = (*inlet)(nil)

// resumeState is an inlet's side of its unit's checkpoints.
type resumeState struct {
	mu sync.Mutex // guards what follows
	// on tells that Resume was called: the unit checkpoints.
	on bool
	// inState are the sequences of the messages the restored checkpoint
	// holds that did not come again.
	inState map[uint64]bool
	// acked are the sequences acknowledged since the last position
	// taken, and before it.
	acked, ackedBefore []uint64
	// current is the receiver of the Run in progress.
	current *receiver
	// forgetAt is when inState no longer matters: the messages a dead
	// predecessor held came again by then.
	forgetAt time.Time
	// senders are, of the restored checkpoint, the number each sender
	// expected next.
	senders map[uint64]uint64
	// missing are, per sender, the messages found missing last, for
	// which the unit started again from its checkpoint: missing again,
	// they stop it.
	missing map[uint64]*MissingError
}

// Resume implements edge.Resumer.
func (in *inlet) Resume(position []byte) error {
	_, seqs, senders, err := decodePosition(position)
	if err != nil {
		return fmt.Errorf("jetstreamedge: resume %s: %w", in.consumer, err)
	}
	rs := &in.resume
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.on, rs.senders = true, senders
	rs.inState = map[uint64]bool{}
	for _, s := range seqs {
		rs.inState[s] = true
	}
	rs.acked, rs.ackedBefore = nil, nil
	rs.forgetAt = time.Now().Add(2*in.t.cfg.AckWait + in.t.cfg.PinnedTTL)
	return nil
}

// Acquire implements edge.Resumer: it returns once this worker owns the
// unit (Config.Owns), as Run waits for.
func (in *inlet) Acquire(ctx context.Context) error {
	t := in.t
	if pin := in.released; pin != "" {
		// The unit this inlet handed over last is no longer held here
		// once unpinned: its new owner waits for that.
		in.released = ""
		cons, err := in.consumerOf(ctx)
		if err == nil {
			err = in.unpin(ctx, cons, pin)
		}
		if err != nil {
			t.cfg.Logger.Warn("unpinning a unit handed over failed", "consumer", in.consumer, "err", err)
		}
	}
	in.holding.Store(false)
	for {
		reassigned := t.reassignment()
		if t.owns(in.consumer, false) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-reassigned:
		}
	}
}

// End implements edge.Resumer: the worker announces the unit ended, so
// that every copy takes it and ends, even if Run returned released before
// the instance ended on the checkpoint it restored; and it unpins the
// consumer if it still holds it.
func (in *inlet) End(ctx context.Context) {
	pin := in.released
	if pin == "" {
		in.ended.Store(true)
		return
	}
	in.released = ""
	cons, err := in.consumerOf(ctx)
	if err != nil {
		// The pin expires by itself.
		in.ended.Store(true)
	} else {
		in.markEnded(ctx, cons, pin)
	}
	in.holding.Store(false)
}

// Position implements edge.Resumer.
func (in *inlet) Position(delivered uint64) ([]byte, error) {
	rs := &in.resume
	rs.mu.Lock()
	r := rs.current
	// Resume replaces the map, never changes it.
	senders := rs.senders
	set := map[uint64]bool{}
	for _, s := range rs.acked {
		set[s] = true
	}
	for _, s := range rs.ackedBefore {
		set[s] = true
	}
	if time.Now().After(rs.forgetAt) {
		rs.inState = nil
	}
	maps.Copy(set, rs.inState)
	rs.ackedBefore, rs.acked = rs.acked, nil
	rs.mu.Unlock()
	if r != nil {
		r.mu.Lock()
		for _, f := range r.pending {
			if f.order != 0 && f.order <= delivered {
				set[f.seq] = true
			}
		}
		senders = r.handedBy(delivered)
		r.mu.Unlock()
	}
	return encodePosition(delivered, slices.Sorted(maps.Keys(set)), senders), nil
}

// Committed implements edge.Resumer.
func (in *inlet) Committed(position []byte) {
	delivered, _, _, err := decodePosition(position)
	rs := &in.resume
	rs.mu.Lock()
	r := rs.current
	rs.mu.Unlock()
	if err != nil || r == nil {
		return
	}
	r.mu.Lock()
	r.committed = max(r.committed, delivered)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run makes r the receiver of the Run in progress, nil after it.
func (rs *resumeState) run(r *receiver) {
	rs.mu.Lock()
	rs.current = r
	rs.mu.Unlock()
}

// resumedSenders returns, of the checkpoint the unit restored, the number
// each sender was expected to send next.
func (in *inlet) resumedSenders() map[uint64]uint64 {
	rs := &in.resume
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := maps.Clone(rs.senders)
	if out == nil {
		out = map[uint64]uint64{}
	}
	return out
}

// foundMissing reports whether the messages e names were found missing
// before, since the unit last started again for them; otherwise it notes
// them.
func (in *inlet) foundMissing(e *MissingError) bool {
	rs := &in.resume
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if was := rs.missing[e.Sender]; was != nil && was.From <= e.To && e.From <= was.To {
		return true
	}
	if rs.missing == nil {
		rs.missing = map[uint64]*MissingError{}
	}
	rs.missing[e.Sender] = e
	return false
}

// checkpointed reports whether the inlet's unit checkpoints.
func (in *inlet) checkpointed() bool {
	rs := &in.resume
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.on
}

// inRestoredState reports whether the message of stream sequence seq is
// held by the checkpoint the unit restored, and forgets it: it does not
// come again.
func (in *inlet) inRestoredState(seq uint64) bool {
	rs := &in.resume
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !rs.inState[seq] {
		return false
	}
	delete(rs.inState, seq)
	rs.acked = append(rs.acked, seq)
	return true
}

// noteAcked records the sequences of messages acknowledged.
func (in *inlet) noteAcked(seqs []uint64) {
	rs := &in.resume
	rs.mu.Lock()
	rs.acked = append(rs.acked, seqs...)
	rs.mu.Unlock()
}

// errPosition refuses a position that does not decode.
var errPosition = errors.New("malformed position")

// encodePosition encodes the delivery number of the last message before
// a cut, the sequences a restore must not take again and the number each
// sender is expected to send next.
func encodePosition(delivered uint64, seqs []uint64, senders map[uint64]uint64) []byte {
	b := binary.AppendUvarint(nil, delivered)
	b = binary.AppendUvarint(b, uint64(len(seqs)))
	var prev uint64
	for _, s := range seqs {
		b = binary.AppendUvarint(b, s-prev)
		prev = s
	}
	b = binary.AppendUvarint(b, uint64(len(senders)))
	for _, id := range slices.Sorted(maps.Keys(senders)) {
		b = binary.LittleEndian.AppendUint64(b, id)
		b = binary.AppendUvarint(b, senders[id])
	}
	return b
}

// decodePosition decodes a position encodePosition encoded; nil is the
// position of a unit that restored nothing. A position without senders
// (written before they were) has none.
func decodePosition(b []byte) (delivered uint64, seqs []uint64, senders map[uint64]uint64, err error) {
	if b == nil {
		return 0, nil, nil, nil
	}
	next := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			err = errPosition
			return 0
		}
		b = b[n:]
		return v
	}
	delivered = next()
	count := next()
	if err != nil || count > uint64(len(b)) {
		return 0, nil, nil, errPosition
	}
	seqs = make([]uint64, 0, count)
	var prev uint64
	for range count {
		prev += next()
		seqs = append(seqs, prev)
	}
	if err == nil && len(b) > 0 {
		count = next()
		if err == nil && count > uint64(len(b)) {
			err = errPosition
		}
		senders = make(map[uint64]uint64, count)
		for i := uint64(0); i < count && err == nil; i++ {
			if len(b) < 8 {
				err = errPosition
				break
			}
			id := binary.LittleEndian.Uint64(b)
			b = b[8:]
			senders[id] = next()
		}
	}
	if err != nil || len(b) > 0 {
		return 0, nil, nil, errPosition
	}
	return delivered, seqs, senders, nil
}
