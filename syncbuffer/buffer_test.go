package syncbuffer

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestBuffer(t *testing.T, cfg Config, inputs int) *Buffer[item] {
	t.Helper()
	b, err := New(cfg, inputs, itemKey, itemMeta)
	require.NoError(t, err)
	return b
}

func data(tm int64, origin uint32, seq uint64) item {
	return item{K: Key{Time: tm, Origin: origin, Seq: seq}}
}

func meta(tm int64, origin uint32, seq uint64) item {
	return item{K: Key{Time: tm, Origin: origin, Seq: seq}, Meta: true}
}

// drain releases at now and returns the released items' times.
func drain(b *Buffer[item], now int64) []int64 {
	var out []int64
	b.Release(now, func(it item) bool {
		out = append(out, it.K.Time)
		return true
	})
	return out
}

func drainKeys(b *Buffer[item], now int64) []Key {
	var out []Key
	b.Release(now, func(it item) bool {
		out = append(out, it.K)
		return true
	})
	return out
}

func TestWindowRelease(t *testing.T) {
	b := newTestBuffer(t, Config{Window: 10}, 1)
	for _, tm := range []int64{5, 3, 12} {
		require.Equal(t, Buffered, b.Push(0, data(tm, 0, uint64(tm)), 12))
	}
	assert.Empty(t, drain(b, 12), "watermark 1 releases nothing")
	require.Equal(t, Buffered, b.Push(0, data(20, 0, 20), 20))
	assert.Equal(t, []int64{3, 5}, drain(b, 20), "watermark 9")
	wm, ok := b.Watermark(20)
	assert.True(t, ok)
	assert.Equal(t, int64(9), wm, "an item at 10 is not late and may still come")
	assert.Equal(t, 2, b.Len())
}

func TestEqualTimestampsDeterministicOrder(t *testing.T) {
	keys := []Key{{Time: 7, Origin: 2, Seq: 1}, {Time: 7, Origin: 1, Seq: 9}, {Time: 7, Origin: 1, Seq: 2}, {Time: 7, Origin: 3, Seq: 0}, {Time: 7, Origin: 2, Seq: 0}}
	want := []Key{{Time: 7, Origin: 1, Seq: 2}, {Time: 7, Origin: 1, Seq: 9}, {Time: 7, Origin: 2, Seq: 0}, {Time: 7, Origin: 2, Seq: 1}, {Time: 7, Origin: 3, Seq: 0}}
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 4, 0, 3, 1}} {
		b := newTestBuffer(t, Config{}, 1)
		for _, i := range order {
			b.Push(0, item{K: keys[i]}, 7)
		}
		assert.Empty(t, drainKeys(b, 7), "more items at 7 may come")
		b.Push(0, data(8, 0, 0), 8)
		assert.Equal(t, want, drainKeys(b, 8), "push order %v", order)
	}
}

func TestEqualKeysKeepArrivalOrder(t *testing.T) {
	b := newTestBuffer(t, Config{Window: 5}, 1)
	for id := range 4 {
		require.Equal(t, Buffered, b.Push(0, item{K: Key{Time: 1}, ID: id}, 1))
	}
	b.EndOfStream(0)
	var ids []int
	b.Release(1, func(it item) bool { ids = append(ids, it.ID); return true })
	assert.Equal(t, []int{0, 1, 2, 3}, ids, "no item with an equal key is lost")
}

func TestDuplicateMeta(t *testing.T) {
	b := newTestBuffer(t, Config{Window: 10}, 3)
	assert.Equal(t, Buffered, b.Push(0, meta(5, 9, 1), 5))
	assert.Equal(t, Duplicate, b.Push(1, meta(5, 9, 1), 5))
	assert.Equal(t, Duplicate, b.Push(2, meta(5, 9, 1), 5))
	assert.Equal(t, Buffered, b.Push(1, meta(5, 9, 2), 5), "another identity")
	for i := range 3 {
		b.EndOfStream(i)
	}
	assert.Equal(t, []Key{{Time: 5, Origin: 9, Seq: 1}, {Time: 5, Origin: 9, Seq: 2}}, drainKeys(b, 5))
	assert.Equal(t, uint64(2), b.Stats().Duplicate)
}

func TestDuplicateMetaAfterFirstReleased(t *testing.T) {
	b := newTestBuffer(t, Config{}, 2) // window 0
	require.Equal(t, Buffered, b.Push(0, meta(5, 9, 1), 5))
	b.Advance(0, 6, math.MinInt64, 6)
	require.Equal(t, Buffered, b.Push(1, data(7, 1, 1), 7))
	require.Equal(t, []int64{5}, drain(b, 7))
	assert.Equal(t, Duplicate, b.Push(1, meta(5, 9, 1), 7), "copy after the first was released")
	require.Equal(t, Buffered, b.Push(0, data(8, 0, 1), 8))
	require.Equal(t, Buffered, b.Push(1, data(9, 1, 2), 9))
	assert.Equal(t, []int64{7}, drain(b, 9), "the copy is not released")
}

func TestAnnouncedProgressReleases(t *testing.T) {
	// A quiet input announces how far it has come; its promise counts
	// even without a window.
	b := newTestBuffer(t, Config{Window: 5}, 2)
	require.Equal(t, Buffered, b.Push(0, data(10, 0, 1), 10))
	require.Equal(t, Buffered, b.Push(0, data(20, 0, 2), 20))
	assert.Empty(t, drain(b, 20), "input 1 has said nothing")
	b.Advance(1, 12, math.MinInt64, 20)
	assert.Empty(t, drain(b, 20), "its bound is 12-5-1")
	b.Advance(1, math.MinInt64, 14, 20)
	assert.Equal(t, []int64{10}, drain(b, 20), "promised nothing at or below 14")
	b.Advance(1, 11, 3, 20)
	wm, _ := b.Watermark(20)
	assert.Equal(t, int64(14), wm, "progress never goes back")
}

func TestMetaForgottenIsLate(t *testing.T) {
	b := newTestBuffer(t, Config{MetaRetention: 10}, 2)
	require.Equal(t, Buffered, b.Push(0, meta(5, 9, 1), 5))
	require.Equal(t, Buffered, b.Push(1, data(100, 1, 1), 100))
	require.Equal(t, Buffered, b.Push(0, data(100, 0, 1), 100))
	b.EndOfStream(0)
	b.Advance(1, 100, 100, 100)
	require.Equal(t, []int64{5, 100, 100}, drain(b, 100))
	assert.Zero(t, b.Stats().MetaRemembered, "expired by the watermark")
	assert.Equal(t, Late, b.Push(1, meta(5, 9, 1), 100), "older than the horizon: never released twice")
	assert.Equal(t, Late, b.Push(1, meta(85, 9, 2), 100), "an unseen identity below the horizon")
	assert.Equal(t, Behind, b.Push(1, meta(95, 9, 3), 100), "an unseen identity behind the release: handle at once")
	assert.Equal(t, Duplicate, b.Push(1, meta(95, 9, 3), 100), "and only once")
}

func TestLateReject(t *testing.T) {
	b := newTestBuffer(t, Config{Window: 3}, 1)
	b.Push(0, data(10, 0, 1), 10)
	assert.Equal(t, Late, b.Push(0, data(6, 0, 2), 10), "older than 10 minus the window")
	assert.Equal(t, Buffered, b.Push(0, data(7, 0, 3), 10), "at the window is not late")
	assert.Equal(t, Late, b.Push(0, item{K: Key{Time: 8, Seq: 4, High: 12}}, 10), "judged by the input's mark when it sent the item")
	assert.Equal(t, Buffered, b.Push(0, data(9, 0, 5), 10))
	assert.Equal(t, []int64{7, 8}[:1], drain(b, 10), "watermark 12-3-1")
	st := b.Stats()
	assert.Equal(t, uint64(2), st.Late)
	assert.Equal(t, int64(7), st.MaxReleased)
}

func TestNoOutOfOrderReleaseAfterLate(t *testing.T) {
	b := newTestBuffer(t, Config{Window: 2}, 1)
	var out []int64
	for i, tm := range []int64{10, 11, 13, 5, 12, 14, 8, 15} {
		b.Push(0, data(tm, 0, uint64(i)), tm)
		out = append(out, drain(b, tm)...)
	}
	b.EndOfStream(0)
	out = append(out, drain(b, 20)...)
	assert.IsNonDecreasing(t, out)
	assert.Equal(t, []int64{10, 11, 12, 13, 14, 15}, out)
	assert.Equal(t, uint64(2), b.Stats().Late, "5 and 8; a late item does not lower the bound")
}

// Released is the key of the newest item released; an item that comes
// with a key before it is never released in order.
func TestReleasedKey(t *testing.T) {
	b := newTestBuffer(t, Config{Window: 5}, 2)
	_, ok := b.Released()
	require.False(t, ok, "nothing released yet")
	b.Push(0, data(10, 1, 5), 10)
	b.Push(0, data(16, 1, 6), 16)
	b.Push(1, data(10, 2, 1), 16)
	b.Advance(1, math.MinInt64, 10, 16)
	require.Equal(t, []int64{10, 10}, drain(b, 16), "input 1 promised nothing more at 10")
	k, ok := b.Released()
	require.True(t, ok)
	assert.Equal(t, Key{Time: 10, Origin: 2, Seq: 1}, k)
	for _, tc := range []struct {
		name  string
		input int
		item  item
		want  Status
	}{
		{"same time, before in order (a promise broken)", 1, data(10, 1, 9), Behind},
		{"same time, after in order", 1, data(10, 3, 0), Buffered},
		{"newer", 1, data(12, 0, 0), Buffered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, b.Push(tc.input, tc.item, 12))
		})
	}
}

func TestTieOrderNotByHash(t *testing.T) {
	// Same time: order is (Origin, Seq), whatever the items' contents.
	b := newTestBuffer(t, Config{}, 1)
	b.Push(0, item{K: Key{Time: 1, Origin: 3, Seq: 1}, ID: 1}, 1)
	b.Push(0, item{K: Key{Time: 1, Origin: 1, Seq: 7}, ID: 2}, 1)
	b.Push(0, item{K: Key{Time: 1, Origin: 1, Seq: 5}, ID: 3}, 1)
	b.Push(0, item{K: Key{Time: 1, Origin: 2, Seq: 0}, ID: 4}, 1)
	b.EndOfStream(0)
	var ids []int
	b.Release(1, func(it item) bool { ids = append(ids, it.ID); return true })
	assert.Equal(t, []int{3, 2, 4, 1}, ids)
}

func TestPerInputWatermark(t *testing.T) {
	b := newTestBuffer(t, Config{Window: 5}, 2)
	for tm := int64(1); tm <= 100; tm++ {
		b.Push(0, data(tm, 0, uint64(tm)), 100)
	}
	b.Push(1, data(20, 1, 1), 100)
	out := drain(b, 100)
	assert.Len(t, out, 14, "below the slow input's 20 minus the window")
	assert.Equal(t, int64(14), out[len(out)-1])
	b.Push(1, data(60, 1, 2), 100)
	assert.Len(t, drain(b, 100), 41, "15 to 54, and input 1's 20")
}

func TestStalledInputReleasedAfterIdleTimeout(t *testing.T) {
	tests := []struct {
		name  string
		setup func(b *Buffer[item])
	}{
		{"never sent", func(*Buffer[item]) {}},
		{"sent then stalled", func(b *Buffer[item]) { b.Push(1, data(2, 1, 1), 0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTestBuffer(t, Config{IdleTimeout: 50}, 2)
			tt.setup(b)
			for now := int64(0); now <= 50; now += 10 {
				b.Push(0, data(now+10, 0, uint64(now)), now)
				assert.LessOrEqual(t, len(drain(b, now)), 1, "held back at %d", now)
			}
			out := drain(b, 51)
			assert.Equal(t, int64(50), out[len(out)-1], "input 1 idle after 50: up to 60-1")
			b.Push(0, data(70, 0, 100), 70)
			assert.Equal(t, []int64{60}, drain(b, 70))
		})
	}
}

func TestAllInputsIdle(t *testing.T) {
	b := newTestBuffer(t, Config{Window: 5, IdleTimeout: 10}, 2)
	b.Push(0, data(10, 0, 1), 0)
	b.Push(1, data(30, 1, 1), 0)
	assert.Empty(t, drain(b, 0), "watermark 4")
	assert.Empty(t, drain(b, 10), "not idle yet: the lowest bound, 10-5-1")
	assert.Equal(t, []int64{10, 30}, drain(b, 11), "both idle: the newest event, 30, plus the 11 that passed since the last sign of life, less the idle timeout")
	b.Push(0, data(45, 0, 2), 40)
	assert.Equal(t, Behind, b.Push(1, data(29, 1, 2), 40), "not late for input 1, but behind the release")
	assert.Equal(t, uint64(1), b.Stats().Behind)
	assert.Empty(t, drain(b, 40), "input 0 active again: watermark 39")
}

// A backfill, a feed of old data, paused for longer than the idle timeout
// is not made late by the pause: event time goes on from its newest event,
// not from the stream clock.
func TestIdleBackfillIsNotMadeLate(t *testing.T) {
	const day = int64(24 * time.Hour)
	b := newTestBuffer(t, Config{Window: 5, IdleTimeout: 10}, 1)
	now := int64(100 * day) // the stream clock, days after the data
	b.Push(0, data(1000, 0, 1), now)
	b.Push(0, data(1003, 0, 2), now)
	assert.Equal(t, []int64{1000, 1003}, drain(b, now+30), "idle after a pause of 30: 1003+30-10")
	assert.Equal(t, Buffered, b.Push(0, data(1004, 0, 3), now+30), "the next reading is on time")
	assert.Equal(t, uint64(0), b.Stats().Behind)
}

func TestIdleTimeoutDisabled(t *testing.T) {
	b := newTestBuffer(t, Config{IdleTimeout: -1}, 2)
	b.Push(0, data(1, 0, 1), 0)
	assert.Empty(t, drain(b, math.MaxInt64))
	_, ok := b.Watermark(math.MaxInt64)
	assert.False(t, ok)
	b.EndOfStream(1)
	assert.Empty(t, drain(b, math.MaxInt64), "more may come at 1")
	b.EndOfStream(0)
	assert.Equal(t, []int64{1}, drain(b, math.MaxInt64))
}

func TestWildFutureTimestamp(t *testing.T) {
	b := newTestBuffer(t, Config{Window: 5, FutureBound: time.Duration(100)}, 1)
	b.Push(0, data(10, 0, 1), 10)
	assert.Equal(t, Invalid, b.Push(0, data(1<<50, 0, 2), 10))
	assert.Equal(t, Invalid, b.Push(0, data(111, 0, 3), 10))
	assert.Equal(t, Buffered, b.Push(0, data(12, 0, 5), 12), "the wild ones did not raise the mark")
	assert.Equal(t, Buffered, b.Push(0, data(110, 0, 4), 12), "at the bound")
	b.EndOfStream(0)
	assert.Equal(t, []int64{10, 12, 110}, drain(b, 200))
	assert.Equal(t, uint64(2), b.Stats().Invalid)
}

func TestInvalidIsNoSignOfLife(t *testing.T) {
	b := newTestBuffer(t, Config{IdleTimeout: 10, FutureBound: 100}, 2)
	b.Push(0, data(5, 0, 1), 0)
	b.Push(1, data(2, 1, 1), 0)
	require.Empty(t, drain(b, 0))
	for now := int64(5); now <= 20; now += 5 {
		require.Equal(t, Invalid, b.Push(1, data(1<<40, 1, uint64(now)), now))
	}
	b.Push(0, data(6, 0, 2), 20)
	assert.Equal(t, []int64{2, 5}, drain(b, 20), "a broken clock does not keep its input active")
}

func TestFutureBoundDisabled(t *testing.T) {
	b := newTestBuffer(t, Config{FutureBound: -1}, 1)
	assert.Equal(t, Buffered, b.Push(0, data(math.MaxInt64, 0, 1), math.MinInt64))
}

func TestFlushAtEndOfStream(t *testing.T) {
	b := newTestBuffer(t, Config{Window: time.Hour}, 3)
	for i, tm := range []int64{30, 10, 20, 5, 25} {
		b.Push(i%3, data(tm, uint32(i%3), uint64(i)), 30)
	}
	b.EndOfStream(0)
	b.EndOfStream(1)
	assert.Empty(t, drain(b, 30))
	b.EndOfStream(2)
	b.EndOfStream(2)
	wm, ok := b.Watermark(30)
	assert.True(t, ok)
	assert.Equal(t, int64(math.MaxInt64), wm)
	assert.Equal(t, []int64{5, 10, 20, 25, 30}, drain(b, 30))
	assert.Zero(t, b.Len())
}

func TestReleaseStopsEarly(t *testing.T) {
	b := newTestBuffer(t, Config{}, 1)
	for tm := int64(1); tm <= 6; tm++ {
		b.Push(0, data(tm, 0, uint64(tm)), 6)
	}
	var got []int64
	b.Release(6, func(it item) bool { got = append(got, it.K.Time); return len(got) < 2 })
	assert.Equal(t, []int64{1, 2}, got)
	assert.Equal(t, 4, b.Len())
	assert.Equal(t, []int64{3, 4, 5}, drain(b, 6))
}

func TestWatermarkBeforeData(t *testing.T) {
	b := newTestBuffer(t, Config{}, 2)
	_, ok := b.Watermark(0)
	assert.False(t, ok, "nothing sent")
	b.Push(0, data(3, 0, 1), 0)
	_, ok = b.Watermark(0)
	assert.False(t, ok, "input 1 still holds everything back")
}

func TestExtremeTimes(t *testing.T) {
	b := newTestBuffer(t, Config{Window: time.Hour, MetaRetention: time.Hour, IdleTimeout: -1}, 1)
	assert.Equal(t, Buffered, b.Push(0, item{K: Key{Time: math.MinInt64, Seq: 1, High: math.MinInt64}}, math.MinInt64))
	assert.Equal(t, Buffered, b.Push(0, meta(math.MinInt64+1, 0, 2), math.MinInt64))
	assert.Equal(t, []int64{math.MinInt64}, drain(b, math.MaxInt64), "the watermark saturates at MinInt64")
	assert.Equal(t, Buffered, b.Push(0, data(math.MaxInt64, 0, 3), math.MaxInt64))
	assert.Equal(t, []int64{math.MinInt64 + 1}, drain(b, math.MaxInt64))
	b.EndOfStream(0)
	assert.Equal(t, []int64{math.MaxInt64}, drain(b, math.MaxInt64))
}

func TestStats(t *testing.T) {
	b := newTestBuffer(t, Config{FutureBound: 10}, 2)
	b.Push(0, data(1, 0, 1), 0)
	b.Push(0, meta(2, 9, 1), 0)
	b.Push(1, meta(2, 9, 1), 0)
	b.Push(1, data(100, 1, 1), 0)
	b.Push(1, data(3, 1, 2), 0)
	b.Push(0, data(4, 0, 2), 0)
	drain(b, 0)
	b.Push(0, data(3, 0, 3), 0)
	assert.Equal(t, Stats{
		Pushed: 7, Released: 2, Late: 1, Invalid: 1, Duplicate: 1,
		Buffered: 2, MaxReleased: 2, MetaRemembered: 1,
	}, b.Stats())
}

func TestPushPanicsOnUnknownInput(t *testing.T) {
	b := newTestBuffer(t, Config{}, 2)
	assert.Panics(t, func() { b.Push(2, data(1, 0, 1), 0) })
	assert.Panics(t, func() { b.Push(-1, data(1, 0, 1), 0) })
	assert.Panics(t, func() { b.EndOfStream(2) })
}

func TestNew(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		inputs int
		key    func(*item) Key
		err    error
	}{
		{"negative window", Config{Window: -1}, 1, itemKey, ErrInvalidConfig},
		{"negative retention", Config{MetaRetention: -1}, 1, itemKey, ErrInvalidConfig},
		{"late policy", Config{Late: 3}, 1, itemKey, ErrInvalidConfig},
		{"negative capacity", Config{Capacity: -1}, 1, itemKey, ErrInvalidConfig},
		{"no inputs", Config{}, 0, itemKey, ErrNoInputs},
		{"nil key", Config{}, 1, nil, ErrNilKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, tt.inputs, tt.key, itemMeta)
			assert.ErrorIs(t, err, tt.err)
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		in, want Config
	}{
		{Config{}, Config{IdleTimeout: DefaultIdleTimeout, FutureBound: DefaultFutureBound, MetaRetention: DefaultMetaRetention, Capacity: DefaultCapacity, CapacityBytes: DefaultCapacityBytes}},
		{Config{Window: time.Hour, IdleTimeout: -1, FutureBound: -1, Late: LatePass, Capacity: 10},
			Config{Window: time.Hour, IdleTimeout: -1, FutureBound: -1, Late: LatePass, MetaRetention: time.Hour, Capacity: 10, CapacityBytes: DefaultCapacityBytes}},
	}
	for _, tt := range tests {
		b, err := New(tt.in, 1, itemKey, nil)
		require.NoError(t, err)
		assert.Equal(t, tt.want, b.Config())
	}
}

func TestNilIsMeta(t *testing.T) {
	b, err := New(Config{}, 1, itemKey, nil)
	require.NoError(t, err)
	assert.Equal(t, Buffered, b.Push(0, meta(1, 0, 1), 1))
	assert.Equal(t, Buffered, b.Push(0, meta(1, 0, 1), 1), "not meta without isMeta")
}

func TestLatePolicyText(t *testing.T) {
	for _, p := range []LatePolicy{LateDrop, LateSide, LatePass} {
		text, err := p.MarshalText()
		require.NoError(t, err)
		var got LatePolicy
		require.NoError(t, got.UnmarshalText(text))
		assert.Equal(t, p, got)
		assert.Equal(t, string(text), p.String())
	}
	_, err := ParseLatePolicy("keep")
	assert.ErrorIs(t, err, ErrUnknownLatePolicy)
	var p LatePolicy
	assert.ErrorIs(t, p.UnmarshalText([]byte("DROP")), ErrUnknownLatePolicy)
	_, err = LatePolicy(7).MarshalText()
	assert.ErrorIs(t, err, ErrUnknownLatePolicy)
	assert.Equal(t, "LatePolicy(7)", LatePolicy(7).String())
}

func TestStatusString(t *testing.T) {
	for s, want := range map[Status]string{Buffered: "buffered", Late: "late", Invalid: "invalid", Duplicate: "duplicate", 9: "Status(9)"} {
		assert.Equal(t, want, s.String())
	}
}

func TestKeyLess(t *testing.T) {
	tests := []struct {
		a, b Key
		want bool
	}{
		{Key{Time: 1, Origin: 9, Seq: 9}, Key{Time: 2, Origin: 0, Seq: 0}, true},
		{Key{Time: 1, Origin: 1, Seq: 9}, Key{Time: 1, Origin: 2, Seq: 0}, true},
		{Key{Time: 1, Origin: 1, Seq: 1}, Key{Time: 1, Origin: 1, Seq: 2}, true},
		{Key{Time: 1, Origin: 1, Seq: 1}, Key{Time: 1, Origin: 1, Seq: 1}, false},
		{Key{Time: 2, Origin: 0, Seq: 0}, Key{Time: 1, Origin: 9, Seq: 9}, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.a.Less(tt.b), "%v < %v", tt.a, tt.b)
	}
}

func TestMin(t *testing.T) {
	b := newTestBuffer(t, Config{Window: 10}, 1)
	_, ok := b.Min()
	assert.False(t, ok)
	b.Push(0, data(5, 0, 1), 5)
	b.Push(0, data(3, 0, 2), 5)
	b.Push(0, data(4, 0, 3), 5)
	it, ok := b.Min()
	assert.True(t, ok)
	assert.Equal(t, int64(3), it.K.Time)
	b.EndOfStream(0)
	b.Release(5, func(item) bool { return false })
	it, _ = b.Min()
	assert.Equal(t, int64(4), it.K.Time, "after a release the next one sits in the head")
	assert.Equal(t, 2, b.Len())
}

func TestFullByBytes(t *testing.T) {
	b := newTestBuffer(t, Config{Window: 100, CapacityBytes: 30}, 1)
	b.MeasureWith(func(it *item) int { return 10 })
	for i := range 3 {
		assert.False(t, b.Full(), "%d items", i)
		b.Push(0, data(int64(i), 0, uint64(i)), 0)
	}
	assert.True(t, b.Full())
	assert.Equal(t, int64(30), b.Bytes())
	b.EndOfStream(0)
	assert.Len(t, drain(b, 0), 3)
	assert.Zero(t, b.Bytes())
	assert.False(t, b.Full())
}
