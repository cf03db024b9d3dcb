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

func TestSpeedValidation(t *testing.T) {
	for _, s := range []float64{0, -1, 0.001, 20000} {
		err := streamclock.ValidSpeed(s)
		require.Error(t, err, "speed %g", s)
	}
	for _, s := range []float64{0.01, 1, 10000, streamclock.Unpaced} {
		err := streamclock.ValidSpeed(s)
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
