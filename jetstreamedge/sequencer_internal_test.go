package jetstreamedge

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// stampedMsg is a message of which a sequencer reads only the data.
type stampedMsg struct {
	jetstream.Msg
	data []byte
}

func (m *stampedMsg) Data() []byte { return m.data }

func stamped(t testing.TB, sender, number uint64) *stampedMsg {
	return settledMsg(t, sender, number, 0)
}

// settledMsg is a message of sender numbered number with the settled
// mark settled.
func settledMsg(t testing.TB, sender, number, settled uint64) *stampedMsg {
	var e encoder
	data, err := e.appendBatch(nil, stamp{sender: sender, number: number, settled: settled}, &edge.Batch{})
	require.NoError(t, err)
	return &stampedMsg{data: data}
}

// stamps returns the senders and numbers of msgs.
func stamps(t testing.TB, msgs []jetstream.Msg) []stamp {
	var out []stamp
	for _, m := range msgs {
		st, err := readStamp(m.Data())
		require.NoError(t, err)
		out = append(out, stamp{sender: st.sender, number: st.number})
	}
	return out
}

func newTestSequencer(wait time.Duration) *sequencer {
	return newSequencer("unit", wait, slog.New(slog.DiscardHandler), &Stats{})
}

// Whatever the order and the copies in which a sender's messages come
// after its first, the sequencer hands each on once it is next, so that
// the first copies come out in the order sent, and it hands on every
// message it took.
func TestSequencerRestoresTheOrderSent(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 30).Draw(rt, "n")
		var arrivals []uint64
		for i := 2; i <= n; i++ {
			arrivals = append(arrivals, uint64(i))
		}
		for range rapid.IntRange(0, 5).Draw(rt, "copies") {
			arrivals = append(arrivals, uint64(rapid.IntRange(1, n).Draw(rt, "copy")))
		}
		arrivals = rapid.Permutation(arrivals).Draw(rt, "arrivals")
		s := newTestSequencer(time.Hour)
		now := time.Unix(0, 0)
		out := s.order(now, []jetstream.Msg{stamped(t, 7, 1)})
		for _, a := range arrivals {
			out = append(out, s.order(now, []jetstream.Msg{stamped(t, 7, a)})...)
		}
		_, holding := s.deadline()
		require.False(t, holding, "nothing missing, nothing held")
		require.Len(t, out, len(arrivals)+1, "every message handed on once")
		var firsts []uint64
		seen := map[uint64]bool{}
		for _, st := range stamps(t, out) {
			if !seen[st.number] {
				seen[st.number] = true
				firsts = append(firsts, st.number)
			}
		}
		require.True(t, slices.IsSorted(firsts), "first copies in the order sent: %v", firsts)
	})
}

// A message ahead of one that never comes waits the sequencer's wait,
// then goes on with the gap skipped.
func TestSequencerSkipsAGapAfterItsWait(t *testing.T) {
	s := newTestSequencer(time.Second)
	t0 := time.Unix(100, 0)
	require.Len(t, s.order(t0, []jetstream.Msg{stamped(t, 1, 1)}), 1)
	require.Empty(t, s.order(t0, []jetstream.Msg{stamped(t, 1, 4), stamped(t, 1, 3)}), "2 is missing")
	deadline, ok := s.deadline()
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Second), deadline)
	out, err := s.expire(t0.Add(time.Second - 1))
	require.NoError(t, err)
	require.Empty(t, out)
	out, err = s.expire(deadline)
	require.NoError(t, err, "nothing says 2 was stored: its sender died trying it")
	require.Equal(t, []stamp{{sender: 1, number: 3}, {sender: 1, number: 4}}, stamps(t, out))
	require.Equal(t, uint64(1), s.stats.GapsSkipped.Load())
	require.Equal(t, []stamp{{sender: 1, number: 5}}, stamps(t, s.order(deadline, []jetstream.Msg{stamped(t, 1, 5)})), "in order again")
	require.Equal(t, []stamp{{sender: 1, number: 2}}, stamps(t, s.order(deadline, []jetstream.Msg{stamped(t, 1, 2)})), "a late one is handed on at once")
}

// In a first round, each sender's messages take the places where its
// messages came, in number order: the numbers missing among them were
// acknowledged before, and the sender goes on past the highest.
func TestSequencerFirstRound(t *testing.T) {
	s := newTestSequencer(time.Hour)
	now := time.Unix(0, 0)
	round := []jetstream.Msg{stamped(t, 1, 9), stamped(t, 2, 4), stamped(t, 1, 5), stamped(t, 2, 3), stamped(t, 1, 7)}
	require.Equal(t, []stamp{{sender: 1, number: 5}, {sender: 2, number: 3}, {sender: 1, number: 7}, {sender: 2, number: 4}, {sender: 1, number: 9}}, stamps(t, s.order(now, round)))
	require.Equal(t, []stamp{{sender: 1, number: 10}}, stamps(t, s.order(now, []jetstream.Msg{stamped(t, 1, 10)})))
	require.Empty(t, s.order(now, []jetstream.Msg{stamped(t, 2, 6)}), "5 of sender 2 is missing")
	held := s.reset()
	require.Equal(t, []stamp{{sender: 2, number: 6}}, stamps(t, held), "a new round takes what was held")
	require.Equal(t, []stamp{{sender: 2, number: 6}}, stamps(t, s.order(now, held)))
}

// A gap a message of its sender says was stored (its settled mark is
// past it) is not skipped after the wait: the sequencer reports what is
// missing. Copies and first rounds count for the mark too.
func TestSequencerReportsAStoredMessageMissing(t *testing.T) {
	cases := []struct {
		name    string
		first   []jetstream.Msg // the first round
		then    []jetstream.Msg
		missing *MissingError // nil: skipped
	}{
		{"stored", []jetstream.Msg{settledMsg(t, 1, 1, 1)}, []jetstream.Msg{settledMsg(t, 1, 4, 3)},
			&MissingError{Consumer: "unit", Sender: 1, From: 2, To: 2, Waited: time.Second}},
		{"all stored", []jetstream.Msg{settledMsg(t, 1, 1, 1)}, []jetstream.Msg{settledMsg(t, 1, 4, 4)},
			&MissingError{Consumer: "unit", Sender: 1, From: 2, To: 3, Waited: time.Second}},
		{"mark from a copy", []jetstream.Msg{settledMsg(t, 1, 1, 1)}, []jetstream.Msg{settledMsg(t, 1, 4, 2), settledMsg(t, 1, 1, 5)},
			&MissingError{Consumer: "unit", Sender: 1, From: 2, To: 3, Waited: time.Second}},
		{"mark from the first round", []jetstream.Msg{settledMsg(t, 1, 1, 3)}, []jetstream.Msg{settledMsg(t, 1, 4, 0)},
			&MissingError{Consumer: "unit", Sender: 1, From: 2, To: 2, Waited: time.Second}},
		{"not stored", []jetstream.Msg{settledMsg(t, 1, 1, 1)}, []jetstream.Msg{settledMsg(t, 1, 4, 2)}, nil},
		{"another sender's mark", []jetstream.Msg{settledMsg(t, 1, 1, 1), settledMsg(t, 2, 1, 1)},
			[]jetstream.Msg{settledMsg(t, 1, 4, 2), settledMsg(t, 2, 2, 9)}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newTestSequencer(time.Second)
			t0 := time.Unix(100, 0)
			s.order(t0, c.first)
			s.order(t0, c.then)
			out, err := s.expire(t0.Add(time.Second))
			if c.missing == nil {
				require.NoError(t, err)
				require.NotEmpty(t, out, "skipped")
				return
			}
			require.Empty(t, out)
			me, ok := errors.AsType[*MissingError](err)
			require.True(t, ok, "%v", err)
			require.Equal(t, c.missing, me)
		})
	}
}

// The senders of a restored checkpoint are known from the start: a
// message past the number one is expected to send next waits for those
// before it, where a first round would have taken it for the sender's
// start.
func TestSequencerSeededWaitsFromTheCheckpoint(t *testing.T) {
	s := newTestSequencer(time.Hour)
	now := time.Unix(0, 0)
	s.seed(now, map[uint64]uint64{1: 5})
	require.Empty(t, s.order(now, []jetstream.Msg{stamped(t, 1, 7)}), "5 and 6 are missing")
	require.Equal(t, []stamp{{sender: 1, number: 3}}, stamps(t, s.order(now, []jetstream.Msg{stamped(t, 1, 3)})),
		"handed on before the cut: at once")
	require.Empty(t, s.order(now, []jetstream.Msg{stamped(t, 1, 6)}))
	require.Equal(t, []stamp{{sender: 1, number: 5}, {sender: 1, number: 6}, {sender: 1, number: 7}},
		stamps(t, s.order(now, []jetstream.Msg{stamped(t, 1, 5)})))
}
