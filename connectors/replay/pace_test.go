package replay_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/metaparticle"
)

const t0 = int64(1_163_438_041_250_000_000) // 2006-11-13 17:14:01.25 UTC

func run(t *testing.T, cfg replay.Config, rec *recorder) *replay.Source {
	t.Helper()
	src, err := replay.New(cfg)
	require.NoError(t, err)
	require.NoError(t, src.Run(context.Background(), rec))
	return src
}

// schedule is when the particles at times should be emitted at speed,
// the first at w0.
func schedule(w0 time.Time, times []int64, speed float64) []time.Time {
	want := make([]time.Time, len(times))
	for i, ts := range times {
		want[i] = w0.Add(time.Duration(float64(ts-times[0]) / speed))
	}
	return want
}

// TestPacing checks that emission times are the event-time offsets
// divided by the speed, for irregular gaps, ties and several speeds.
func TestPacing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	times := make([]int64, 2000)
	ts := t0
	for i := range times {
		times[i] = ts
		if rng.IntN(4) > 0 { // a quarter are ties
			ts += rng.Int64N(int64(2 * time.Minute))
		}
	}
	path := writeLP(t, t.TempDir(), "a.lp", times)
	for _, speed := range []float64{0.01, 1, 7, 100, 10000} {
		w := newFakeWall()
		w0 := w.Now()
		rec := &recorder{wall: w}
		src := run(t, replay.Config{Inputs: []replay.Input{{Path: path}}, Speed: replay.Speed(speed), Wall: w}, rec)
		require.Equal(t, times, rec.times, "speed %g", speed)
		require.Equal(t, schedule(w0, times, speed), rec.at, "speed %g", speed)
		assert.Equal(t, []metaparticle.SpeedChange{{Speed: speed}}, rec.metas, "the speed is announced first")
		assert.Equal(t, []int64{t0}, rec.metaAt)
		st := src.Status()
		assert.Equal(t, uint64(len(times)), st.Read)
		assert.Equal(t, uint64(len(times)), st.Emitted)
		assert.True(t, st.Done)
		assert.Equal(t, time.Unix(0, times[len(times)-1]).UTC(), st.Position)
		assert.Less(t, w.arms, len(times), "ties are emitted together")
	}
}

// TestUnpaced checks that speed max emits everything without waiting.
func TestUnpaced(t *testing.T) {
	times := regular(1000, t0, time.Hour)
	path := writeLP(t, t.TempDir(), "a.lp", times)
	w := newFakeWall()
	w0 := w.Now()
	rec := &recorder{wall: w}
	run(t, replay.Config{Inputs: []replay.Input{{Path: path}}, Speed: replay.Max, Wall: w}, rec)
	require.Equal(t, times, rec.times)
	assert.Zero(t, w.arms)
	assert.Equal(t, w0, rec.at[len(rec.at)-1])
	assert.Equal(t, []metaparticle.SpeedChange{{Speed: float64(replay.Max)}}, rec.metas)
}

// TestSpeedChangeMidRun checks that a change applies from the moment it
// is made: what was emitted keeps its times, the rest follows the new
// speed from the position reached, and a SpeedChange goes downstream
// before the next particle, at the last particle's event time.
func TestSpeedChangeMidRun(t *testing.T) {
	times := regular(100, t0, time.Second)
	path := writeLP(t, t.TempDir(), "a.lp", times)
	w := newFakeWall()
	w0 := w.Now()
	rec := &recorder{wall: w}
	src, err := replay.New(replay.Config{Inputs: []replay.Input{{Path: path}}, Speed: 10, Wall: w})
	require.NoError(t, err)
	arms := 0
	w.arm = func(time.Time) (time.Duration, bool) {
		arms++
		if arms == 40 { // waiting for particle 40, 39 is out
			require.NoError(t, src.SetSpeed(100))
			return 0, false
		}
		return 0, true
	}
	require.NoError(t, src.Run(context.Background(), rec))
	require.Equal(t, times, rec.times)
	want := schedule(w0, times[:40], 10)
	changed := want[39]
	want = append(want, schedule(changed, times[39:], 100)[1:]...)
	require.Equal(t, want, rec.at)
	assert.Equal(t, []metaparticle.SpeedChange{{Speed: 10}, {Speed: 100}}, rec.metas)
	assert.Equal(t, []int64{t0, times[39]}, rec.metaAt)
	assert.Equal(t, []int{0, 40}, rec.metaIdx)
	assert.Equal(t, replay.Speed(100), src.Status().Speed)
}

// TestPauseResume checks that nothing is emitted while paused and that
// the schedule goes on from the pause, shifted by its length.
func TestPauseResume(t *testing.T) {
	times := regular(50, t0, time.Second)
	path := writeLP(t, t.TempDir(), "a.lp", times)
	w := newFakeWall()
	w0 := w.Now()
	rec := &recorder{wall: w, onMeta: make(chan metaparticle.SpeedChange, 4)}
	src, err := replay.New(replay.Config{Inputs: []replay.Input{{Path: path}}, Speed: 2, Wall: w})
	require.NoError(t, err)
	arms := 0
	var pausedAt time.Time
	w.arm = func(time.Time) (time.Duration, bool) {
		arms++
		if arms == 20 {
			// Half-way to particle 20: 250 ms of the 500 ms gap.
			w.Advance(250 * time.Millisecond)
			pausedAt = w.Now()
			src.Pause()
			return 0, false
		}
		return 0, true
	}
	done := make(chan error)
	go func() { done <- src.Run(context.Background(), rec) }()
	require.Equal(t, metaparticle.SpeedChange{Speed: 2}, <-rec.onMeta)
	require.Equal(t, metaparticle.SpeedChange{Speed: 2, Paused: true}, <-rec.onMeta)
	assert.True(t, src.Status().Paused)
	w.Advance(time.Hour)
	src.Resume()
	require.Equal(t, metaparticle.SpeedChange{Speed: 2}, <-rec.onMeta)
	require.NoError(t, <-done)

	require.Equal(t, times, rec.times)
	want := schedule(w0, times[:20], 2)
	resumed := pausedAt.Add(time.Hour)
	// Particle 20 was 250 ms away when the pause came.
	want = append(want, schedule(resumed.Add(-250*time.Millisecond), times[19:], 2)[1:]...)
	require.Equal(t, want, rec.at)
	for _, at := range rec.at {
		assert.False(t, at.After(pausedAt) && at.Before(resumed), "emitted while paused at %s", at)
	}
	assert.Equal(t, []int{0, 20, 20}, rec.metaIdx)
}

// TestNoDrift replays a million particles (a tenth under the race
// detector) with a wall clock that always wakes late by up to a
// millisecond: every particle is late by no more than one wake-up, the
// last one included, so lateness does not add up.
func TestNoDrift(t *testing.T) {
	n := 1_000_000
	if raceEnabled {
		n /= 10
	}
	times := regular(n, t0, time.Millisecond)
	path := writeLP(t, t.TempDir(), "a.lp", times)
	w := newFakeWall()
	w0 := w.Now()
	rng := rand.New(rand.NewPCG(3, 4))
	const maxLate = time.Millisecond
	w.arm = func(time.Time) (time.Duration, bool) { return time.Duration(rng.Int64N(int64(maxLate))), true }
	rec := &recorder{wall: w}
	run(t, replay.Config{Inputs: []replay.Input{{Path: path}}, Speed: 1, Wall: w}, rec)
	require.Len(t, rec.at, n)
	var worst time.Duration
	for i, at := range rec.at {
		late := at.Sub(w0.Add(time.Duration(times[i] - t0)))
		require.GreaterOrEqual(t, late, time.Duration(0), "particle %d early", i)
		worst = max(worst, late)
	}
	assert.LessOrEqual(t, worst, maxLate)
	last := rec.at[n-1].Sub(w0) - time.Duration(times[n-1]-t0)
	assert.LessOrEqual(t, last, maxLate, "the last particle is no later than one wake-up")
	assert.Less(t, w.arms, n, "particles due together are emitted together")
}

// TestSpeedValidation checks that speeds out of range are refused.
func TestSpeedValidation(t *testing.T) {
	src, err := replay.New(replay.Config{Inputs: []replay.Input{{Path: "x.lp"}}})
	require.NoError(t, err)
	for _, s := range []replay.Speed{0.001, 20000, -1} {
		assert.ErrorIs(t, src.SetSpeed(s), replay.ErrInvalidSpeed)
	}
	for in, want := range map[string]replay.Speed{"max": replay.Max, "MAX": replay.Max, "10": 10, "0.5x": 0.5, "10000": 10000} {
		got, err := replay.ParseSpeed(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "fast", "0", "1e9", "0.001"} {
		_, err := replay.ParseSpeed(in)
		assert.ErrorIs(t, err, replay.ErrInvalidSpeed, in)
	}
	assert.Equal(t, "max", replay.Max.String())
	assert.Equal(t, "2.5x", replay.Speed(2.5).String())
}

// TestPacingExtremeTimes replays event times near both ends of int64,
// whose differences overflow int64: emissions keep their order and their
// spacing, and a loop ends before its event time would wrap around.
func TestPacingExtremeTimes(t *testing.T) {
	times := []int64{math.MinInt64 + 1, -1, math.MaxInt64 - int64(time.Hour)}
	path := writeLP(t, t.TempDir(), "extreme.lp", times)
	w := newFakeWall()
	w0 := w.Now()
	rec := &recorder{wall: w}
	run(t, replay.Config{Inputs: []replay.Input{{Path: path}}, Speed: 10000, Wall: w}, rec)
	require.Equal(t, times, rec.times)
	span := 2 * (float64(math.MaxInt64) / 10000)
	assert.InDelta(t, span, float64(rec.at[2].Sub(w0)), span*1e-6, "the last one is due about 21 days later")
	assert.True(t, rec.at[1].After(rec.at[0]))

	w = newFakeWall()
	rec = &recorder{wall: w}
	run(t, replay.Config{Inputs: []replay.Input{{Path: path}}, Speed: replay.Max, Loop: true, Wall: w}, rec)
	assert.Equal(t, times, rec.times, "a second pass would pass the int64 range")

	late := writeLP(t, t.TempDir(), "late.lp", []int64{math.MaxInt64 - 3*int64(time.Second), math.MaxInt64 - 2*int64(time.Second)})
	rec = &recorder{wall: w}
	run(t, replay.Config{Inputs: []replay.Input{{Path: late}}, Speed: replay.Max, Loop: true, Wall: w}, rec)
	assert.Equal(t, []int64{math.MaxInt64 - 3*int64(time.Second), math.MaxInt64 - 2*int64(time.Second),
		math.MaxInt64 - 1*int64(time.Second), math.MaxInt64}, rec.times, "the third pass stops where time would wrap")
}

// A Source is its run's stream clock: it stands at the schedule's
// position, runs on at the replay's speed, and stands still while paused.
func TestSourceIsTheStreamClock(t *testing.T) {
	times := regular(10, t0, time.Second)
	path := writeLP(t, t.TempDir(), "a.lp", times)
	w := newFakeWall()
	src, err := replay.New(replay.Config{Inputs: inputs(path), Speed: 10, Wall: w})
	require.NoError(t, err)
	assert.Equal(t, int64(math.MinInt64), src.Now(), "before the first particle")
	require.NoError(t, src.Run(context.Background(), &recorder{wall: w}))
	last := times[len(times)-1]
	assert.Equal(t, last, src.Now())
	w.Advance(time.Second)
	assert.Equal(t, last+int64(10*time.Second), src.Now(), "ten seconds of event time a second at 10x")
	src.Pause()
	w.Advance(time.Hour)
	assert.Equal(t, last+int64(10*time.Second), src.Now(), "paused")
}
