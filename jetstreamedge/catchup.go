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
// (its first message, or the first after a silence longer than PinnedTTL,
// in which the consumer may have been pinned elsewhere) it holds back what
// it receives until the server has no message pending that this inlet did
// not receive, then hands it on in stream order; it holds at most until
// every such message must have come, an ack wait and a pull's expiry after
// the pin moved.
type catchUp struct {
	cons  jetstream.Consumer
	limit time.Duration
	// taken counts the messages the inlet received, settled those it
	// acknowledged, refused or terminated: the server counts the
	// difference among its pending messages.
	taken, settled atomic.Uint64

	last    time.Time // when the inlet last received a message
	holding bool
	since   time.Time // when holding began
	asked   time.Time // when the server was last asked, zero at first
	held    []heldMsg
}

// heldMsg is a message held back, with its stream sequence.
type heldMsg struct {
	m   jetstream.Msg
	seq uint64
}

// admit takes msgs, just received at now, and returns those to hand on
// now; it holds back the others. began tells that a round of holding
// began with msgs.
func (c *catchUp) admit(now time.Time, msgs []jetstream.Msg, silence time.Duration) (out []jetstream.Msg, began bool) {
	if len(msgs) == 0 {
		return nil, false
	}
	if c.last.IsZero() || now.Sub(c.last) > silence {
		c.holding, c.since, c.asked = true, now, time.Time{}
		began = true
	}
	c.last = now
	if !c.holding {
		return msgs, false
	}
	c.hold(msgs)
	return nil, began
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
	var caught bool
	var err error
	if now.Sub(c.asked) >= catchUpPoll {
		c.asked = now
		caught, err = c.caughtUp(ctx)
	}
	if !caught && now.Sub(c.since) < c.limit {
		return nil, err
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
