package jetstreamedge

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// settleSpacing is the least time between two rounds of acknowledgements
// of a receiver.
const settleSpacing = 20 * time.Millisecond

// receiver hands one consumer's messages to a Feed: it drops the
// messages the checkpoint its unit restored holds, and copies of particles
// already received, by identity and by the position the restored state
// released up to; it acknowledges a message once the engine reports it
// done and a committed checkpoint of the unit is after it (see
// position.go), and keeps the messages in progress alive.
type receiver struct {
	in   *inlet
	feed edge.Feed
	c    *catchUp
	b    edge.Batch
	// wake is signalled when the engine finished a message, or a
	// checkpoint committed.
	wake chan struct{}
	// started tells that from was read.
	started bool

	mu   sync.Mutex // guards what follows: done callbacks come from the engine
	seen *identitySet
	// pending holds the messages taken and not yet acknowledged, under
	// their first delivery; bySeq the same by stream sequence.
	pending map[jetstream.Msg]*inFlight
	bySeq   map[uint64]*inFlight
	// from is the position right after the newest particle the unit's
	// restored state released: the particles before it are copies.
	from    syncbuffer.Key
	hasFrom bool
	// stopped tells that no round settles messages any more: those done
	// afterwards are acknowledged if a committed checkpoint is after
	// them, and given back otherwise.
	stopped bool
	// ends marks the inputs whose end of stream was handed to the feed
	// and has not failed.
	ends map[int]bool
	// committed is the delivery number of the last message before the
	// newest checkpoint committed; delivered numbers the messages handed
	// to the feed, in order.
	committed, delivered uint64
	// handed is, per sender, one past the highest number of its messages
	// handed on (to the feed, or dropped as held by the restored state);
	// undo takes the last one delivered out again, for a position before
	// it.
	handed map[uint64]uint64
	undo   struct{ order, sender, prev uint64 }
	// asked is committed when the receiver last asked for a checkpoint,
	// plus one; 0 before it asked.
	asked uint64
}

// inFlight is a message taken and not yet acknowledged.
type inFlight struct {
	seq uint64 // its stream sequence
	// order is its number among the messages handed to the feed, 0 until
	// it is.
	order uint64
	// latest is its newest delivery, if the server delivered it again
	// while it was in progress here: acknowledgements go to it.
	latest jetstream.Msg
	done   bool // the engine finished it
	// end is one more than the input whose end of stream it carried, 0
	// for none.
	end int
}

func newReceiver(in *inlet, feed edge.Feed, c *catchUp) *receiver {
	return &receiver{
		in: in, feed: feed, c: c, wake: make(chan struct{}, 1),
		seen: newIdentitySet(in.t.cfg.DedupWindow), pending: map[jetstream.Msg]*inFlight{}, bySeq: map[uint64]*inFlight{},
		ends: map[int]bool{}, handed: in.resumedSenders(),
	}
}

// handLocked notes that the message stamped st is handed on, delivered as
// the delivered-th if delivered is not 0. r.mu is held.
func (r *receiver) handLocked(st stamp, delivered uint64) {
	prev := r.handed[st.sender]
	if st.number >= prev {
		r.handed[st.sender] = st.number + 1
	}
	if delivered != 0 {
		r.undo.order, r.undo.sender, r.undo.prev = delivered, st.sender, prev
	}
}

// handedBy returns, per sender, one past the highest number handed on by
// the time the delivered-th message was delivered. r.mu is held.
func (r *receiver) handedBy(delivered uint64) map[uint64]uint64 {
	out := maps.Clone(r.handed)
	if u := r.undo; u.order > delivered {
		if u.prev == 0 {
			delete(out, u.sender)
		} else {
			out[u.sender] = u.prev
		}
	}
	return out
}

// receive delivers m. It returns an error only when the feed refused it.
func (r *receiver) receive(ctx context.Context, m jetstream.Msg) error {
	t := r.in.t
	t.stats.Received.Add(1)
	md, err := m.Metadata()
	if err == nil && md.NumDelivered > 1 {
		t.stats.Redelivered.Add(1)
	}
	st, stErr := readStamp(m.Data())
	if err == nil && r.in.inRestoredState(md.Sequence.Stream) {
		// Its particles are in the state the unit restored.
		t.stats.Duplicates.Add(1)
		if stErr == nil {
			r.mu.Lock()
			r.handLocked(st, 0)
			r.mu.Unlock()
		}
		r.forget(m)
		if t.fence.up() {
			return nil
		}
		return m.Ack()
	}
	if _, err := decodeBatch(m.Data(), &r.b); err != nil {
		// A message that does not decode never will: it is not delivered
		// again.
		t.cfg.Logger.Error("dropping a message that does not decode", "subject", m.Subject(), "err", err)
		r.forget(m)
		return m.TermWithReason(err.Error())
	}
	if r.spareEnd() {
		// Every copy of an upstream instance that ends sends its end of
		// stream, and every copy of this unit, on each worker, needs one
		// from each input to end; the copies that are not the unit's owner
		// take theirs once it ended. Taken here, a second end would be
		// acknowledged with the first, and another copy would never end.
		t.stats.SpareEnds.Add(1)
		r.forget(m)
		return m.NakWithDelay(spareEndDelay)
	}
	r.delivered++
	r.b.Position = r.delivered
	ids := r.dropCopies(m, st)
	err = r.feed.Deliver(ctx, &r.b, func(err error) { r.finished(m, ids, err) })
	clear(r.b.Items)
	return err
}

// spareEndDelay is how long an end of stream given back for another copy
// of the unit waits before the server delivers it again: to this worker,
// until the unit ended here and it unpinned the consumer.
const spareEndDelay = time.Second

// spareEnd reports whether r.b, just decoded, is an end of stream without
// data from an input whose end the feed took already; otherwise, when it
// carries an end, it marks the input's end taken.
func (r *receiver) spareEnd() bool {
	if !r.b.EOS {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ends[r.b.Input] && !slices.ContainsFunc(r.b.Items, func(it edge.Item) bool { return it.Particle.Meta == nil }) {
		return true
	}
	r.ends[r.b.Input] = true
	return false
}

// finished takes the engine's outcome of m.
func (r *receiver) finished(m jetstream.Msg, ids []identity, err error) {
	r.mu.Lock()
	f := r.pending[m]
	if f == nil {
		// Given back when the receiver stopped.
		r.mu.Unlock()
		return
	}
	if err == nil && !r.stopped {
		f.done = true
		r.mu.Unlock()
		select {
		case r.wake <- struct{}{}:
		default:
		}
		return
	}
	ack := err == nil && f.order <= r.committed
	if err != nil {
		// The particles come again, and must be taken then.
		r.seen.remove(ids)
		if f.end > 0 {
			delete(r.ends, f.end-1)
		}
	}
	r.drop(m, f)
	target := f.delivery(m)
	r.mu.Unlock()
	r.c.settled.Add(1)
	switch {
	case errors.Is(err, edge.ErrReleased):
		r.in.t.cfg.Logger.Debug("message given back with its unit", "subject", m.Subject())
	case err != nil:
		r.in.t.cfg.Logger.Warn("message failed: delivered again", "subject", m.Subject(), "err", err)
	}
	switch {
	case r.in.t.fence.up():
		// Settled by nobody: the server delivers it again an ack wait
		// later, to whichever worker holds the unit then.
	case ack:
		_ = target.Ack()
	default:
		_ = target.Nak()
	}
}

// receiveAll delivers msgs in order.
func (r *receiver) receiveAll(ctx context.Context, msgs []jetstream.Msg) error {
	if len(msgs) == 0 {
		return nil
	}
	if !r.started {
		// The unit restored its state: what its buffer released, its
		// operations took.
		from, ok := r.feed.Released()
		r.mu.Lock()
		r.from, r.hasFrom = after(from), ok
		r.mu.Unlock()
		r.started = true
	}
	for i, m := range msgs {
		if err := r.receive(ctx, m); err != nil {
			// Given back now rather than an ack wait from now.
			for _, rest := range msgs[i+1:] {
				r.forget(rest)
				_ = rest.Nak()
			}
			return err
		}
	}
	r.askForCheckpoint()
	return nil
}

// askForCheckpoint asks the unit for a checkpoint once half of
// MaxAckPending messages wait for one: the server delivers nothing more
// past MaxAckPending, and the unit acknowledges only at checkpoints, so
// waiting for the interval would idle it. It asks once per checkpoint
// committed.
func (r *receiver) askForCheckpoint() {
	r.mu.Lock()
	ask := len(r.pending) >= max(r.in.t.cfg.MaxAckPending/2, 1) && r.asked != r.committed+1
	if ask {
		r.asked = r.committed + 1
	}
	r.mu.Unlock()
	if ask {
		r.feed.Checkpoint()
	}
}

// keep counts m among the messages in progress, kept alive until
// settled, and reports whether m is new here. A message the server
// delivered again while it is in progress here (its in-progress signals
// came late: a loaded machine) is not: its particles are in the engine
// already, where a window may hold them. Taken as a new message, its
// particles would all be dropped as copies and the message acknowledged
// at once, and the server would forget what the window holds, which a
// worker taking the unit over after a crash would then never receive. So
// it is the same message, acknowledged through this newest delivery once
// the engine finished the first.
func (r *receiver) keep(m jetstream.Msg) bool {
	var seq uint64
	if md, err := m.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if f := r.bySeq[seq]; f != nil && seq != 0 {
		f.latest = m
		stats := &r.in.t.stats
		stats.Received.Add(1)
		stats.Redelivered.Add(1)
		r.c.settled.Add(1)
		return false
	}
	f := &inFlight{seq: seq}
	r.pending[m] = f
	if seq != 0 {
		r.bySeq[seq] = f
	}
	return true
}

// delivery returns the delivery of the message first delivered as m that
// acknowledgements go to.
func (f *inFlight) delivery(m jetstream.Msg) jetstream.Msg {
	if f.latest != nil {
		return f.latest
	}
	return m
}

// drop removes m, in flight as f, from the messages in progress.
func (r *receiver) drop(m jetstream.Msg, f *inFlight) {
	delete(r.pending, m)
	if r.bySeq[f.seq] == f {
		delete(r.bySeq, f.seq)
	}
}

// forget settles m without the engine.
func (r *receiver) forget(m jetstream.Msg) {
	r.mu.Lock()
	if f := r.pending[m]; f != nil {
		r.drop(m, f)
	}
	r.mu.Unlock()
	r.c.settled.Add(1)
}

// dropCopies removes from r.b the data particles already received and
// those before the position the unit's restored state released up to,
// and returns the identities it added; it notes the message, stamped st,
// handed on as the latest delivered. Meta particles stay: the engine
// handles each identity once itself.
func (r *receiver) dropCopies(m jetstream.Msg, st stamp) []identity {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handLocked(st, r.delivered)
	f := r.pending[m]
	if f == nil {
		f = &inFlight{}
		r.pending[m] = f
	}
	f.order = r.delivered
	if r.b.EOS {
		f.end = r.b.Input + 1
	}
	var added []identity
	kept := r.b.Items[:0]
	for _, it := range r.b.Items {
		if p := &it.Particle; p.Meta == nil {
			k := keyOf(p)
			id := identity{origin: p.Origin, seq: p.Seq}
			if r.hasFrom && k.Less(r.from) || !r.seen.add(id) {
				r.in.t.stats.Duplicates.Add(1)
				continue
			}
			added = append(added, id)
		}
		kept = append(kept, it)
	}
	clear(r.b.Items[len(kept):])
	r.b.Items = kept
	return added
}

// settleAll acknowledges the messages the engine finished that a
// committed checkpoint is after until ctx ends, a round at a time, at
// most one per settleSpacing; then it gives back those it could not
// acknowledge.
func (r *receiver) settleAll(ctx context.Context) {
	ticker := time.NewTicker(settleSpacing)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			r.stop()
			return
		case <-r.wake:
		}
		r.settle()
		select {
		case <-ctx.Done():
		case <-ticker.C:
		}
	}
}

// stop settles what it can a last time, then gives back the messages
// done that no committed checkpoint is after, for the unit's next holder
// to take again.
func (r *receiver) stop() {
	r.settle()
	r.mu.Lock()
	r.stopped = true
	var back []jetstream.Msg
	for m, f := range r.pending {
		if f.done {
			back = append(back, f.delivery(m))
			r.drop(m, f)
		}
	}
	r.mu.Unlock()
	fenced := r.in.t.fence.up()
	for _, m := range back {
		r.c.settled.Add(1)
		if !fenced {
			_ = m.Nak()
		}
	}
}

// settle acknowledges the messages done that a committed checkpoint of
// the unit is after.
func (r *receiver) settle() {
	if r.in.t.fence.up() {
		// A fenced worker acknowledges nothing: the unit's next holder
		// restores a checkpoint that may be older than this one's.
		return
	}
	var (
		ready []jetstream.Msg
		seqs  []uint64
	)
	r.mu.Lock()
	for m, f := range r.pending {
		if f.done && f.order != 0 && f.order <= r.committed {
			r.drop(m, f)
			ready = append(ready, f.delivery(m))
			seqs = append(seqs, f.seq)
		}
	}
	r.mu.Unlock()
	r.in.noteAcked(seqs)
	for _, m := range ready {
		r.c.settled.Add(1)
		_ = m.Ack()
	}
}

// keepAlive tells the server every interval that the messages still in
// progress are being worked on, so that a window holding them for longer
// than the ack wait does not get them delivered again. It does so in
// stream order, so that if this worker dies, their ack waits expire in
// that order, and the worker taking the unit over receives them in it.
func (r *receiver) keepAlive(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	type inProgress struct {
		m   jetstream.Msg
		seq uint64
	}
	var msgs []inProgress
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if r.in.t.fence.up() {
			// Kept alive, a message would come to the unit's next holder
			// only later.
			continue
		}
		r.mu.Lock()
		msgs = msgs[:0]
		for m, f := range r.pending {
			msgs = append(msgs, inProgress{m: f.delivery(m), seq: f.seq})
		}
		r.mu.Unlock()
		slices.SortFunc(msgs, func(a, b inProgress) int { return cmp.Compare(a.seq, b.seq) })
		for _, p := range msgs {
			_ = p.m.InProgress()
		}
		clear(msgs)
	}
}

// after returns the position right after k in release order.
func after(k syncbuffer.Key) syncbuffer.Key {
	switch {
	case k.Seq < math.MaxUint64:
		k.Seq++
	case k.Origin < math.MaxUint32:
		k.Origin, k.Seq = k.Origin+1, 0
	case k.Time < math.MaxInt64:
		k.Time, k.Origin, k.Seq = k.Time+1, 0, 0
	}
	return k
}

// keyOf returns p's position in release order.
func keyOf(p *particle.Particle) syncbuffer.Key {
	return syncbuffer.Key{Time: p.Time, Origin: p.Origin, Seq: p.Seq}
}
