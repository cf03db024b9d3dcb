package jetstreamedge

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// sequencer hands on each sender's messages in the order it numbered
// them. A message can come after later ones of its sender: its publish
// failed and was tried again after the later ones were stored, or its
// delivery was lost (a connection or a consumer's leader gone) and the
// server delivers it again only once its ack wait expired. Handed on
// after them, its particles would be late. So a message that comes ahead
// of a missing one of its sender waits for it, at most wait. Then, if a
// message of the sender says the server had confirmed the missing one
// (its settled mark is past it), it was stored and is gone from the
// stream: the sequencer reports it (MissingError). Otherwise the sender
// is taken to be gone with the missing message (a worker that died while
// it was trying a publish again, whose successor derives its content
// again), and the gap is skipped.
//
// The senders of a unit's restored checkpoint are known from the start
// (seed): every number below the one the checkpoint expects of each was
// handed on before its cut.
//
// The messages of a sender in the first round a sequencer sees of it
// (its first message, or all those a catch-up releases at once) are
// handed on in number order, in the places where they came among the
// others' (in stream order after a catch-up: a unit that moved must see
// the messages of the worker that had it before the new ones, which hold
// copies), and the sender's next number is one past the
// highest of them: the numbers missing among them were acknowledged
// before, by this worker or by one that ran the unit before it.
type sequencer struct {
	consumer string
	wait     time.Duration
	log      *slog.Logger
	stats    *Stats
	senders  map[uint64]*sender
}

// sender is what a sequencer knows of one sender.
type sender struct {
	next    uint64 // the number expected next
	settled uint64 // the highest settled mark of its messages
	held    []numbered
	since   time.Time // when the gap before held began
	last    time.Time // when a message of the sender last came
}

// numbered is a message held back, with its number.
type numbered struct {
	m      jetstream.Msg
	number uint64
}

func newSequencer(consumer string, wait time.Duration, log *slog.Logger, stats *Stats) *sequencer {
	return &sequencer{consumer: consumer, wait: wait, log: log, stats: stats, senders: map[uint64]*sender{}}
}

// seed makes the senders of next known, each expecting its number there.
func (s *sequencer) seed(now time.Time, next map[uint64]uint64) {
	for id, n := range next {
		s.senders[id] = &sender{next: n, last: now}
	}
}

// MissingError is what a unit's inlet returns when messages of a sender
// did not come although the server had confirmed them to their sender: a
// gap that nothing fills, since they are gone from the stream (deleted,
// or lost with a node's storage) and their inputs were acknowledged.
type MissingError struct {
	Consumer string // the unit's
	Sender   uint64
	// From and To are the numbers missing, To included.
	From, To uint64
	Waited   time.Duration
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("jetstreamedge: unit %s: messages %d to %d of sender %016x are missing: their sender saw them stored, and they did not come in %s",
		e.Consumer, e.From, e.To, e.Sender, e.Waited.Round(time.Millisecond))
}

// order takes msgs, received at now, and returns those to hand on now, in
// order; it holds back those that came ahead of a missing one. A message
// without a stamp is handed on, to be dropped as malformed.
func (s *sequencer) order(now time.Time, msgs []jetstream.Msg) []jetstream.Msg {
	out := make([]jetstream.Msg, 0, len(msgs))
	// The senders new in this round: their messages, and the places in
	// out where they came, which they fill in number order.
	var first map[uint64]*firstRound
	for _, m := range msgs {
		st, err := readStamp(m.Data())
		if err != nil {
			out = append(out, m)
			continue
		}
		ss := s.senders[st.sender]
		if ss != nil {
			ss.settled = max(ss.settled, st.settled)
		}
		if ss == nil {
			if first == nil {
				first = map[uint64]*firstRound{}
			}
			f := first[st.sender]
			if f == nil {
				f = &firstRound{}
				first[st.sender] = f
			}
			f.msgs = append(f.msgs, numbered{m: m, number: st.number})
			f.places = append(f.places, len(out))
			f.settled = max(f.settled, st.settled)
			out = append(out, nil)
			continue
		}
		ss.last = now
		switch {
		case st.number < ss.next:
			// A copy of one handed on, or one that failed and comes
			// again: the receiver drops the particles it has.
			out = append(out, m)
		case st.number == ss.next:
			ss.next++
			out = append(out, m)
			out = ss.release(now, out)
		default:
			if len(ss.held) == 0 {
				ss.since = now
			}
			s.stats.HeldBack.Add(1)
			ss.hold(numbered{m: m, number: st.number})
		}
	}
	for id, f := range first {
		slices.SortStableFunc(f.msgs, func(a, b numbered) int { return cmp.Compare(a.number, b.number) })
		for i, n := range f.msgs {
			out[f.places[i]] = n.m
		}
		s.senders[id] = &sender{next: f.msgs[len(f.msgs)-1].number + 1, settled: f.settled, last: now}
	}
	return out
}

// firstRound is what a sequencer received of a sender in the first round.
type firstRound struct {
	msgs    []numbered
	places  []int
	settled uint64
}

// hold adds n to the held messages, in number order.
func (ss *sender) hold(n numbered) {
	i, _ := slices.BinarySearchFunc(ss.held, n.number, func(h numbered, number uint64) int {
		switch {
		case h.number < number:
			return -1
		case h.number > number:
			return 1
		}
		return 0
	})
	// After the copies of the same number.
	for i < len(ss.held) && ss.held[i].number == n.number {
		i++
	}
	ss.held = slices.Insert(ss.held, i, n)
}

// release appends to out the held messages that are next in order.
func (ss *sender) release(now time.Time, out []jetstream.Msg) []jetstream.Msg {
	i := 0
	for ; i < len(ss.held) && ss.held[i].number <= ss.next; i++ {
		if ss.held[i].number == ss.next {
			ss.next++
		}
		out = append(out, ss.held[i].m)
	}
	if i > 0 {
		ss.held = slices.Delete(ss.held, 0, i)
		ss.since = now
	}
	return out
}

// expire returns, in order, the messages that waited wait for a missing
// one before them, skipping the gap; and forgets the senders that were
// silent long enough to be gone. If a missing message was stored, it
// returns a *MissingError instead.
func (s *sequencer) expire(now time.Time) ([]jetstream.Msg, error) {
	var out []jetstream.Msg
	for id, ss := range s.senders {
		switch {
		case len(ss.held) > 0 && now.Sub(ss.since) >= s.wait:
			if ss.settled > ss.next {
				return nil, &MissingError{Consumer: s.consumer, Sender: id, From: ss.next,
					To: min(ss.held[0].number, ss.settled) - 1, Waited: now.Sub(ss.since)}
			}
			s.stats.GapsSkipped.Add(1)
			s.log.Warn("messages missing from a sender: skipped", "sender", id, "from", ss.next, "to", ss.held[0].number-1, "waited", now.Sub(ss.since))
			ss.next = ss.held[0].number
			out = ss.release(now, out)
		case len(ss.held) == 0 && now.Sub(ss.last) >= forgetAfter*s.wait:
			delete(s.senders, id)
		}
	}
	return out, nil
}

// forgetAfter is how many waits a sender may be silent before a
// sequencer forgets it.
const forgetAfter = 10

// deadline returns when the next gap is skipped, and false if no message
// is held back.
func (s *sequencer) deadline() (time.Time, bool) {
	var first time.Time
	for _, ss := range s.senders {
		if len(ss.held) > 0 && (first.IsZero() || ss.since.Before(first)) {
			first = ss.since
		}
	}
	return first.Add(s.wait), !first.IsZero()
}

// reset forgets every sender, and returns the messages held back, to be
// given back when the unit is handed over.
func (s *sequencer) reset() []jetstream.Msg {
	var held []jetstream.Msg
	for _, ss := range s.senders {
		for _, h := range ss.held {
			held = append(held, h.m)
		}
	}
	clear(s.senders)
	return held
}
