package jetstreamedge

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/topology"
)

// identity is a data particle's identity, fixed where it was created.
type identity struct {
	origin uint32
	seq    uint64
}

// identitySet remembers the last identities added, up to its capacity.
type identitySet struct {
	set  map[identity]struct{}
	ring []identity
	next int
}

func newIdentitySet(capacity int) *identitySet {
	return &identitySet{set: make(map[identity]struct{}), ring: make([]identity, 0, capacity)}
}

// add adds id and reports whether it was new.
func (s *identitySet) add(id identity) bool {
	if _, ok := s.set[id]; ok {
		return false
	}
	if len(s.ring) < cap(s.ring) {
		s.ring = append(s.ring, id)
	} else {
		delete(s.set, s.ring[s.next])
		s.ring[s.next] = id
		s.next = (s.next + 1) % len(s.ring)
	}
	s.set[id] = struct{}{}
	return true
}

func (s *identitySet) remove(ids []identity) {
	for _, id := range ids {
		delete(s.set, id)
	}
}

// receiver hands one consumer's messages to a Feed: it drops copies of
// particles already received, acknowledges a message once the engine
// reports it done, and keeps the messages in progress alive.
type receiver struct {
	in   *inlet
	feed topology.Feed
	b    topology.RemoteBatch

	mu      sync.Mutex // guards what follows: done callbacks come from the engine
	seen    *identitySet
	pending map[jetstream.Msg]struct{}
}

func newReceiver(in *inlet, feed topology.Feed) *receiver {
	return &receiver{in: in, feed: feed, seen: newIdentitySet(in.t.cfg.DedupWindow), pending: map[jetstream.Msg]struct{}{}}
}

// receive delivers m. It returns an error only when the feed refused it.
func (r *receiver) receive(ctx context.Context, m jetstream.Msg) error {
	t := r.in.t
	t.stats.Received.Add(1)
	if md, err := m.Metadata(); err == nil && md.NumDelivered > 1 {
		t.stats.Redelivered.Add(1)
	}
	if err := decodeBatch(m.Data(), &r.b); err != nil {
		// A message that does not decode never will: it is not delivered
		// again.
		t.cfg.Logger.Error("dropping a message that does not decode", "subject", m.Subject(), "err", err)
		return m.TermWithReason(err.Error())
	}
	ids := r.dropCopies()
	r.mu.Lock()
	r.pending[m] = struct{}{}
	r.mu.Unlock()
	err := r.feed.Deliver(ctx, &r.b, func(err error) {
		r.mu.Lock()
		delete(r.pending, m)
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
// than the ack wait does not get them delivered again.
func (r *receiver) keepAlive(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		r.mu.Lock()
		msgs := make([]jetstream.Msg, 0, len(r.pending))
		for m := range r.pending {
			msgs = append(msgs, m)
		}
		r.mu.Unlock()
		for _, m := range msgs {
			_ = m.InProgress()
		}
	}
}
