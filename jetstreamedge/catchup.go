package jetstreamedge

import (
	"cmp"
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// catchUpPoll is how often an inlet catching up asks the server whether
// the previous worker's messages all reached it.
const catchUpPoll = 100 * time.Millisecond

// catchUp keeps a unit's order when its consumer is pinned to this worker
// after another: the messages the other worker took and did not
// acknowledge come again once their ack wait expires, each at its own
// deadline and not always in order, while new messages flow at once. A
// message handed to the instance before an older one raises its high-water
// mark and watermark past the older one's particles, which are then late
// and dropped, or miss their window. So when an inlet starts receiving
// (its first message), or receives a message whose delivery does not
// follow the last one it received (the server numbers its deliveries: the
// ones between went to another worker, or were lost on the way), it holds
// back what it receives until the server has no message pending that
// this inlet did not receive, then hands it on in stream order; it holds
// at most until every such message must have come, an ack wait and a
// pull's expiry after the pin moved. A silence alone starts no round: a
// NATS node stopped silences a unit for seconds without moving it.
type catchUp struct {
	cons  jetstream.Consumer
	limit time.Duration
	// taken counts the messages the inlet received, settled those it
	// acknowledged, refused or terminated: the server counts the
	// difference among its pending messages.
	taken, settled atomic.Uint64

	// delivered is the server's delivery number of the last message
	// received, started whether there was one.
	delivered uint64
	started   bool
	holding   bool
	since     time.Time // when holding began
	asked     time.Time // when the server was last asked, zero at first
	held      []heldMsg
}

// heldMsg is a message held back, with its stream sequence.
type heldMsg struct {
	m   jetstream.Msg
	seq uint64
}

// admit takes msgs, just received at now in the order the server
// delivered them, and returns those to hand on now; it holds back the
// others. began tells that a round of holding began with msgs, after
// messages received before (not with the inlet's first).
func (c *catchUp) admit(now time.Time, msgs []jetstream.Msg) (out []jetstream.Msg, began bool) {
	if len(msgs) == 0 {
		return nil, false
	}
	first, moved := !c.started, false
	for _, m := range msgs {
		md, err := m.Metadata()
		if err != nil {
			continue
		}
		if c.started && md.Sequence.Consumer != c.delivered+1 {
			moved = true
		}
		c.delivered, c.started = md.Sequence.Consumer, true
	}
	if first || moved {
		c.holding, c.since, c.asked = true, now, time.Time{}
	}
	if !c.holding {
		return msgs, false
	}
	c.hold(msgs)
	return nil, moved && !first
}

// hold adds msgs to the messages held back.
func (c *catchUp) hold(msgs []jetstream.Msg) {
	for _, m := range msgs {
		var seq uint64
		if md, err := m.Metadata(); err == nil {
			seq = md.Sequence.Stream
		}
		c.held = append(c.held, heldMsg{m: m, seq: seq})
	}
}

// release returns the messages held back, in stream order, once the inlet
// caught up, or once it waited long enough; nil while it goes on holding
// them.
func (c *catchUp) release(ctx context.Context, now time.Time) ([]jetstream.Msg, error) {
	if !c.holding {
		return nil, nil
	}
	var err error
	if now.Sub(c.since) < c.limit {
		if now.Sub(c.asked) < catchUpPoll {
			return nil, nil
		}
		c.asked = now
		var caught bool
		if caught, err = c.caughtUp(ctx); !caught {
			return nil, err
		}
	}
	slices.SortFunc(c.held, func(a, b heldMsg) int { return cmp.Compare(a.seq, b.seq) })
	msgs := make([]jetstream.Msg, len(c.held))
	for i, h := range c.held {
		msgs[i] = h.m
	}
	c.holding, c.held = false, nil
	return msgs, err
}

// caughtUp reports whether every message the server holds pending was
// received by this inlet. Messages in flight either way make the count
// err towards not yet: those received are counted before asking, those
// settled after the answer.
func (c *catchUp) caughtUp(ctx context.Context) (bool, error) {
	taken := c.taken.Load()
	info, err := c.cons.Info(ctx)
	if err != nil {
		return false, err
	}
	settled := c.settled.Load()
	return settled <= taken && uint64(info.NumAckPending) <= taken-settled, nil
}
