package jetstreamedge

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/topology"
)

// receiver hands one consumer's messages to a Feed: it drops copies of
// particles already received, acknowledges a message once the engine
// reports it done, and keeps the messages in progress alive.
type receiver struct {
	in   *inlet
	feed topology.Feed
	c    *catchUp
	b    topology.RemoteBatch

	mu   sync.Mutex // guards what follows: done callbacks come from the engine
	seen *identitySet
	// pending maps the messages in progress to their stream sequence.
	pending map[jetstream.Msg]uint64
}

func newReceiver(in *inlet, feed topology.Feed, c *catchUp) *receiver {
	return &receiver{in: in, feed: feed, c: c, seen: newIdentitySet(in.t.cfg.DedupWindow), pending: map[jetstream.Msg]uint64{}}
}

// receive delivers m. It returns an error only when the feed refused it.
func (r *receiver) receive(ctx context.Context, m jetstream.Msg) error {
	t := r.in.t
	t.stats.Received.Add(1)
	if md, err := m.Metadata(); err == nil && md.NumDelivered > 1 {
		t.stats.Redelivered.Add(1)
	}
	if _, err := decodeBatch(m.Data(), &r.b); err != nil {
		// A message that does not decode never will: it is not delivered
		// again.
		t.cfg.Logger.Error("dropping a message that does not decode", "subject", m.Subject(), "err", err)
		r.forget(m)
		return m.TermWithReason(err.Error())
	}
	ids := r.dropCopies()
	r.keep(m)
	err := r.feed.Deliver(ctx, &r.b, func(err error) {
		r.mu.Lock()
		delete(r.pending, m)
		r.c.settled.Add(1)
		if err != nil {
			// The particles come again, and must not be dropped then.
			r.seen.remove(ids)
		}
		r.mu.Unlock()
		if err != nil {
			t.cfg.Logger.Warn("message failed: delivered again", "subject", m.Subject(), "err", err)
			_ = m.Nak()
			return
		}
		_ = m.Ack()
	})
	clear(r.b.Items)
	return err
}

// receiveAll delivers msgs in order.
func (r *receiver) receiveAll(ctx context.Context, msgs []jetstream.Msg) error {
	for _, m := range msgs {
		if err := r.receive(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// keep counts m among the messages in progress, kept alive until settled.
func (r *receiver) keep(m jetstream.Msg) {
	var seq uint64
	if md, err := m.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	r.mu.Lock()
	r.pending[m] = seq
	r.mu.Unlock()
}

// forget settles m without the engine.
func (r *receiver) forget(m jetstream.Msg) {
	r.mu.Lock()
	delete(r.pending, m)
	r.mu.Unlock()
	r.c.settled.Add(1)
}

// dropCopies removes the data particles already received from r.b and
// returns the identities it added. Meta particles stay: the engine handles
// each identity once itself.
func (r *receiver) dropCopies() []identity {
	r.mu.Lock()
	defer r.mu.Unlock()
	var added []identity
	kept := r.b.Items[:0]
	for _, it := range r.b.Items {
		if it.Particle.Meta == nil {
			id := identity{origin: it.Particle.Origin, seq: it.Particle.Seq}
			if !r.seen.add(id) {
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
		r.mu.Lock()
		msgs = msgs[:0]
		for m, seq := range r.pending {
			msgs = append(msgs, inProgress{m: m, seq: seq})
		}
		r.mu.Unlock()
		slices.SortFunc(msgs, func(a, b inProgress) int { return cmp.Compare(a.seq, b.seq) })
		for _, p := range msgs {
			_ = p.m.InProgress()
		}
		clear(msgs)
	}
}
