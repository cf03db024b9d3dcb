package statuspage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHubHandsASlowClientTheNewestUpdateOnly(t *testing.T) {
	h := newHub()
	slow, ok := h.subscribe()
	require.True(t, ok)
	fast, _ := h.subscribe()
	for _, u := range []string{"1", "2", "3"} {
		h.publish([]byte(u))
		if u == "2" {
			require.Equal(t, "2", string(<-fast.next))
		}
	}
	require.Equal(t, "3", string(<-slow.next), "the newest replaces what was not taken")
	require.Len(t, slow.next, 0, "one update waits at most")
	require.Equal(t, "3", string(<-fast.next))

	h.unsubscribe(fast)
	h.publish([]byte("4"))
	require.Len(t, fast.next, 0, "an unsubscribed client gets nothing")

	h.close()
	h.close()
	_, ok = h.subscribe()
	require.False(t, ok, "no client after close")
	select {
	case <-h.done:
	default:
		t.Fatal("close ends the streams")
	}
}
