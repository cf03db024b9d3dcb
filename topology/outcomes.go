package topology

import (
	"context"
	"sync"

	"github.com/sensorstorm/sensorstorm/acker"
)

// outcomes is a source instance's queue of finished trees. Bolts push
// under its own short lock; a goroutine of the instance's hands them to
// the source's Acknowledger and the dead-letter sink outside every engine
// lock, so that a callback may emit again and a slow one delays only its
// own source. A queued tree keeps its pending token until it is
// delivered: the queue is bounded by AckingConfig.MaxPending, and a slow
// source waits for its own callbacks.
type outcomes struct {
	ready chan struct{} // size one: a signal pending covers every push
	mu    sync.Mutex
	next  outcomeBatch
}

// outcomeBatch is what a delivery hands on: the trees acknowledged and
// those that failed for good.
type outcomeBatch struct {
	acks  []uint64 // message ids
	fails []gaveUp
}

// gaveUp is a tree whose particle failed for good.
type gaveUp struct {
	msgID  uint64
	reason acker.Reason
	err    error
}

func newOutcomes() *outcomes { return &outcomes{ready: make(chan struct{}, 1)} }

// ack queues the acknowledgement of the trees ts.
func (q *outcomes) ack(ts []tree) {
	q.mu.Lock()
	for _, t := range ts {
		q.next.acks = append(q.next.acks, t.msgID)
	}
	q.mu.Unlock()
	q.signal()
}

// fail queues a tree that failed for good.
func (q *outcomes) fail(msgID uint64, r acker.Reason, err error) {
	q.mu.Lock()
	q.next.fails = append(q.next.fails, gaveUp{msgID: msgID, reason: r, err: err})
	q.mu.Unlock()
	q.signal()
}

func (q *outcomes) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take moves what is queued into b, whose memory the queue takes over.
func (q *outcomes) take(b *outcomeBatch) {
	clear(b.fails)
	q.mu.Lock()
	b.acks, q.next.acks = q.next.acks, b.acks[:0]
	b.fails, q.next.fails = q.next.fails, b.fails[:0]
	q.mu.Unlock()
}

// deliverOutcomes hands the source the outcomes of its trees until ctx
// ends, then those queued by then. Run waits for it: no callback comes
// after Run returned.
func (s *sourceInstance) deliverOutcomes(ctx context.Context, q *outcomes) {
	var b outcomeBatch
	for {
		select {
		case <-q.ready:
		case <-ctx.Done():
			q.take(&b)
			s.deliver(&b)
			return
		}
		q.take(&b)
		s.deliver(&b)
	}
}

// deliver calls the source's callbacks for b and gives back the trees'
// pending tokens.
func (s *sourceInstance) deliver(b *outcomeBatch) {
	if len(b.acks) > 0 {
		if all, ok := s.ackr.(BatchAcknowledger); ok {
			all.AckBatch(b.acks)
		} else {
			for _, id := range b.acks {
				s.ackr.Ack(id)
			}
		}
		s.pending.give(len(b.acks))
	}
	for _, f := range b.fails {
		s.topo.acks.giveUp(s, f.msgID, f.reason, f.err)
	}
}
