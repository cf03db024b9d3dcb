package streamclock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/streamclock"
)

func TestLiveFollowsWall(t *testing.T) {
	w := streamclock.NewFake(time.Unix(100, 0))
	c := streamclock.Live(w)
	require.Equal(t, int64(100e9), c.Now())
	w.Advance(1500 * time.Millisecond)
	require.Equal(t, int64(101.5e9), c.Now())
}

func TestReplaySpeedChangesApplyFromThatPoint(t *testing.T) {
	w := streamclock.NewFake(time.Unix(0, 0))
	start := int64(1_000_000e9)
	c, err := streamclock.Replay(w, start, 100)
	require.NoError(t, err)

	w.Advance(time.Second) // 100 s of event time
	require.Equal(t, start+100e9, c.Now())

	require.NoError(t, c.SetSpeed(10))
	w.Advance(time.Second) // 10 s more
	require.Equal(t, start+110e9, c.Now())

	c.Pause()
	w.Advance(time.Hour)
	require.Equal(t, start+110e9, c.Now())
	c.Resume()
	w.Advance(time.Second)
	require.Equal(t, start+120e9, c.Now())
}

func TestUnpacedFollowsObservedTime(t *testing.T) {
	w := streamclock.NewFake(time.Unix(0, 0))
	c, err := streamclock.Replay(w, 5, streamclock.Unpaced)
	require.NoError(t, err)
	w.Advance(time.Hour)
	require.Equal(t, int64(5), c.Now())
	c.Observe(42)
	c.Observe(7)
	require.Equal(t, int64(42), c.Now())

	require.NoError(t, c.SetSpeed(2))
	w.Advance(time.Second)
	require.Equal(t, int64(42+2e9), c.Now())
}

func TestSpeedValidation(t *testing.T) {
	for _, s := range []float64{0, -1, 0.001, 20000} {
		_, err := streamclock.Replay(streamclock.System{}, 0, s)
		require.Error(t, err, "speed %g", s)
	}
	for _, s := range []float64{0.01, 1, 10000, streamclock.Unpaced} {
		_, err := streamclock.Replay(streamclock.System{}, 0, s)
		require.NoError(t, err, "speed %g", s)
	}
}

func TestFakeTickerFiresOnAdvance(t *testing.T) {
	w := streamclock.NewFake(time.Unix(0, 0))
	c, stop := w.NewTicker(time.Second)
	w.Advance(500 * time.Millisecond)
	require.Empty(t, c)
	w.Advance(600 * time.Millisecond)
	require.Len(t, c, 1)
	<-c
	stop()
	w.Advance(time.Hour)
	require.Empty(t, c)
}
