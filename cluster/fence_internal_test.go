package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// The fence rises once no announcement sent in the last half TTL was
// confirmed, and lifts only with one sent recently: one that was sent
// before the silence and confirmed only after it does not.
func TestFenceRisesAfterItsPartOfTheTTL(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	f := newFenceClock(1500*time.Millisecond, c.now)

	c.advance(500 * time.Millisecond)
	require.False(t, f.check(), "a third of the way")
	require.False(t, f.renewed(c.now()), "not fenced: nothing to lift")

	// Silence: the announcement sent now is confirmed much later.
	sent := c.now()
	c.advance(1499 * time.Millisecond)
	require.False(t, f.check(), "just before the fence")
	c.advance(time.Millisecond)
	require.True(t, f.check(), "at the fence")
	require.True(t, f.up())
	require.False(t, f.check(), "risen once")

	c.advance(5 * time.Second)
	require.False(t, f.renewed(sent), "an announcement sent before the silence lifts nothing")
	require.True(t, f.up())

	require.True(t, f.renewed(c.now().Add(-time.Second)), "a recent one lifts it")
	require.False(t, f.up())
	require.False(t, f.check())

	// A confirmation of an older one does not move the contact back.
	require.False(t, f.renewed(sent))
	c.advance(499 * time.Millisecond)
	require.False(t, f.check(), "measured from the newest announcement")
	c.advance(time.Millisecond)
	require.True(t, f.check())
}

// A worker that never got an announcement through fences itself off a
// half TTL after it started.
func TestFenceRisesWithoutAnyAnnouncement(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	f := newFenceClock(time.Second, c.now)
	c.advance(999 * time.Millisecond)
	require.False(t, f.check())
	c.advance(time.Millisecond)
	require.True(t, f.check())
}
