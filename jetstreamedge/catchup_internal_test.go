package jetstreamedge

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// deliveredMsg is a message of which a catch-up reads only the metadata.
type deliveredMsg struct {
	jetstream.Msg
	md jetstream.MsgMetadata
}

func (m *deliveredMsg) Metadata() (*jetstream.MsgMetadata, error) { return &m.md, nil }

// delivered returns the message stored at stream sequence seq and
// delivered as the server's delivery number n.
func delivered(n, seq uint64) *deliveredMsg {
	return &deliveredMsg{md: jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Consumer: n, Stream: seq}}}
}

// A round of holding back begins with an inlet's first message and with a
// message whose delivery does not follow the last one received (the ones
// between went elsewhere), never with a silence alone: a NATS node
// stopped silences a unit that stays where it is.
func TestCatchUpBeginsWhenDeliveriesWentElsewhere(t *testing.T) {
	t0 := time.Unix(0, 0)
	tests := []struct {
		name      string
		after     time.Duration
		next      []jetstream.Msg
		wantHeld  bool
		wantBegan bool
	}{
		{name: "the next delivery at once", after: time.Millisecond, next: []jetstream.Msg{delivered(3, 12)}},
		{name: "the next delivery after a long silence", after: time.Hour, next: []jetstream.Msg{delivered(3, 12), delivered(4, 13)}},
		{name: "deliveries missing", after: time.Millisecond, next: []jetstream.Msg{delivered(5, 14)}, wantHeld: true, wantBegan: true},
		{name: "deliveries missing inside a batch", after: time.Millisecond, next: []jetstream.Msg{delivered(3, 12), delivered(7, 15)}, wantHeld: true, wantBegan: true},
		{name: "a delivery number taken again by a new leader", after: time.Millisecond, next: []jetstream.Msg{delivered(2, 13)}, wantHeld: true, wantBegan: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &catchUp{limit: time.Minute}
			out, began := c.admit(t0, []jetstream.Msg{delivered(1, 10), delivered(2, 11)})
			require.Empty(t, out, "the first messages are held back")
			require.False(t, began, "the first round is not a new one")
			// Caught up at the limit: the server is not asked.
			released, err := c.release(t.Context(), t0.Add(c.limit))
			require.NoError(t, err)
			require.Len(t, released, 2)

			out, began = c.admit(t0.Add(c.limit+tt.after), tt.next)
			require.Equal(t, tt.wantBegan, began)
			if tt.wantHeld {
				require.Empty(t, out)
				require.True(t, c.holding)
				return
			}
			require.Equal(t, tt.next, out)
			require.False(t, c.holding)
		})
	}
}
