package jetstreamedge

import (
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
	var e encoder
	data, err := e.appendBatch(nil, stamp{sender: sender, number: number}, &edge.Batch{})
	require.NoError(t, err)
	return &stampedMsg{data: data}
}

func stamps(t testing.TB, msgs []jetstream.Msg) []stamp {
	var out []stamp
	for _, m := range msgs {
		st, err := readStamp(m.Data())
		require.NoError(t, err)
		out = append(out, st)
	}
	return out
}

func newTestSequencer(wait time.Duration) *sequencer {
	return newSequencer(wait, slog.New(slog.DiscardHandler), &Stats{})
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
	require.Empty(t, s.expire(t0.Add(time.Second-1)))
	out := s.expire(deadline)
	require.Equal(t, []stamp{{1, 3}, {1, 4}}, stamps(t, out))
	require.Equal(t, uint64(1), s.stats.GapsSkipped.Load())
	require.Equal(t, []stamp{{1, 5}}, stamps(t, s.order(deadline, []jetstream.Msg{stamped(t, 1, 5)})), "in order again")
	require.Equal(t, []stamp{{1, 2}}, stamps(t, s.order(deadline, []jetstream.Msg{stamped(t, 1, 2)})), "a late one is handed on at once")
}

// In a first round, each sender's messages take the places where its
// messages came, in number order: the numbers missing among them were
// acknowledged before, and the sender goes on past the highest.
func TestSequencerFirstRound(t *testing.T) {
	s := newTestSequencer(time.Hour)
	now := time.Unix(0, 0)
	round := []jetstream.Msg{stamped(t, 1, 9), stamped(t, 2, 4), stamped(t, 1, 5), stamped(t, 2, 3), stamped(t, 1, 7)}
	require.Equal(t, []stamp{{1, 5}, {2, 3}, {1, 7}, {2, 4}, {1, 9}}, stamps(t, s.order(now, round)))
	require.Equal(t, []stamp{{1, 10}}, stamps(t, s.order(now, []jetstream.Msg{stamped(t, 1, 10)})))
	require.Empty(t, s.order(now, []jetstream.Msg{stamped(t, 2, 6)}), "5 of sender 2 is missing")
	held := s.reset()
	require.Equal(t, []stamp{{2, 6}}, stamps(t, held), "a new round takes what was held")
	require.Equal(t, []stamp{{2, 6}}, stamps(t, s.order(now, held)))
}
