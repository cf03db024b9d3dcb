package acker

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBranchingTree(t *testing.T) {
	// A root emits a and b; each emits two grandchildren. Every order of
	// acking the six tuples that respects causality completes the tree
	// exactly at the last ack.
	orders := map[string][]int{
		"depth first":      {0, 2, 3, 1, 4, 5},
		"breadth first":    {0, 1, 2, 3, 4, 5},
		"leaves last":      {0, 1, 5, 4, 3, 2},
		"interleaved":      {1, 5, 0, 2, 4, 3},
		"right then left":  {1, 4, 5, 0, 3, 2},
		"left leaves late": {0, 1, 4, 2, 5, 3},
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			s := newTopo(t, Config{})
			root, kids := s.spout(2)
			a, b := kids[0], kids[1]
			a1, a2 := s.emit(a), s.emit(a)
			b1, b2 := s.emit(b), s.emit(b)
			tuples := []*tuple{a, b, a1, a2, b1, b2}
			for i, k := range order {
				done := s.ack(tuples[k])
				if i < len(order)-1 {
					require.Empty(t, done, "complete after %d acks", i+1)
					require.Equal(t, 1, s.tab.Len())
				} else {
					require.Equal(t, []RootID{root}, done)
				}
			}
			assert.Zero(t, s.tab.Len())
		})
	}
}

func TestAggregateAcrossRoots(t *testing.T) {
	// An aggregate anchored to inputs of three roots keeps all three
	// pending until it is acked itself.
	s := newTopo(t, Config{})
	var roots []RootID
	var inputs []*tuple
	for range 3 {
		r, kids := s.spout(1)
		roots = append(roots, r)
		inputs = append(inputs, kids[0])
	}
	agg := s.emit(inputs...)
	require.Len(t, agg.ids, 3)
	for _, in := range inputs {
		require.Empty(t, s.ack(in))
	}
	require.Equal(t, 3, s.tab.Len())
	assert.ElementsMatch(t, roots, s.ack(agg))
	assert.Zero(t, s.tab.Len())
}

func TestSameInputAnchoredTwice(t *testing.T) {
	s := newTopo(t, Config{})
	root, kids := s.spout(1)
	in := kids[0]
	twice := s.emit(in, in) // two edges from the same parent
	join := s.emit(in, twice)
	require.Empty(t, s.ack(in))
	require.Empty(t, s.ack(twice))
	assert.Equal(t, []RootID{root}, s.ack(join))
}

func TestZeroChildTree(t *testing.T) {
	tab := newTestTable(t, Config{Capacity: 1})
	_, _, err := tab.Init(0, 1)
	require.NoError(t, err)
	id, done, err := tab.Init(0, 0) // completes even when full
	require.NoError(t, err)
	assert.True(t, done)
	assert.Zero(t, id)
	assert.Equal(t, 1, tab.Len())
}

func TestTimeout(t *testing.T) {
	cfg := Config{ProgressTimeout: time.Second, HardTimeout: time.Minute}
	s := newTopo(t, cfg)
	root, kids := s.spout(1)
	other, _ := s.spout(1)
	_ = s.emit(kids[0]) // never acked

	var failed []RootID
	var reasons []Reason
	record := func(id RootID, r Reason) {
		failed = append(failed, id)
		reasons = append(reasons, r)
	}
	s.now = int64(time.Second / 2)
	require.Empty(t, s.ack(kids[0])) // progress at 0.5 s for root only

	s.tab.Expire(int64(time.Second), int64(time.Second), record)
	require.Empty(t, failed, "never early")

	const late = time.Second + 12*time.Millisecond // 3 ticks of at most 1/256 s
	s.tab.Expire(int64(late), int64(late), record)
	assert.Equal(t, []RootID{other}, failed)
	assert.Equal(t, []Reason{Timeout}, reasons)

	s.tab.Expire(int64(late+time.Second/2), int64(late+time.Second/2), record)
	assert.Equal(t, []RootID{other, root}, failed)
	assert.Equal(t, []Reason{Timeout, Timeout}, reasons)

	_, ok := s.tab.Update(s.now, root, 1)
	assert.False(t, ok, "ack after timeout")
	assert.Zero(t, s.tab.Len())
}

func TestProgressKeepsTreeAlive(t *testing.T) {
	// A held tuple (a window, say) renewed on every step makes progress
	// and does not time out; the hard cap still ends it.
	const step = 400 * time.Millisecond
	cfg := Config{ProgressTimeout: time.Second, HardTimeout: 10 * time.Second}
	s := newTopo(t, cfg)
	root, kids := s.spout(1)
	held := kids[0]
	var got []Reason
	for s.now <= int64(10*time.Second) {
		next := s.emit(held)
		require.Empty(t, s.ack(held))
		held = next
		s.now += int64(step)
		s.tab.Expire(s.now, s.now, func(id RootID, r Reason) {
			assert.Equal(t, root, id)
			got = append(got, r)
		})
		if len(got) > 0 {
			break
		}
	}
	assert.Equal(t, []Reason{Expired}, got)
	assert.Greater(t, s.now, int64(10*time.Second))
	assert.LessOrEqual(t, s.now, int64(10*time.Second+step+step))
}

func TestPausedProgressClock(t *testing.T) {
	// While the engine holds the progress clock, queued trees do not time
	// out; the hard cap runs on the stream clock regardless.
	tab := newTestTable(t, Config{ProgressTimeout: time.Second, HardTimeout: 10 * time.Second})
	_, _, err := tab.Init(0, 1)
	require.NoError(t, err)
	fail := func(RootID, Reason) { t.Fatal("failed while paused") }
	for now := int64(0); now < int64(9*time.Second); now += int64(time.Second / 2) {
		tab.Expire(now, 0, fail)
	}
	// The pause ends: progress resumes 9 s behind the stream clock.
	tab.Expire(int64(9*time.Second), int64(time.Second/2), fail)
	var got []Reason
	tab.Expire(int64(9*time.Second+time.Second/4), int64(time.Second+time.Second/4),
		func(_ RootID, r Reason) { got = append(got, r) })
	assert.Equal(t, []Reason{Timeout}, got)

	// A tree started during a pause that Expire has not seen yet is not
	// timed out early: its progress counts from the later start.
	_, _, err = tab.Init(int64(20*time.Second), 1)
	require.NoError(t, err)
	tab.Expire(int64(20*time.Second+time.Second/2), int64(11*time.Second), fail)
}

// A caller that read its clock before another goroutine's Expire ran (the
// clock then jumped) must not stamp a tree behind the progress clock that
// Expire saw: the tree would time out at once.
func TestStaleClockDoesNotAgeTrees(t *testing.T) {
	tab := newTestTable(t, Config{ProgressTimeout: time.Second, HardTimeout: time.Hour})
	fail := func(RootID, Reason) { t.Fatal("a fresh tree timed out") }
	// Paused from 1 s on: the progress clock stays at 1 s while the
	// stream clock runs to 5 s.
	tab.Expire(int64(5*time.Second), int64(time.Second), fail)
	// Read at 2 s, before that Expire; applied after it.
	stale := int64(2 * time.Second)
	root, _, err := tab.Init(stale, 1)
	require.NoError(t, err)
	other, _, err := tab.Init(int64(5*time.Second), 1)
	require.NoError(t, err)
	done, ok := tab.Update(stale, other, 0)
	require.True(t, ok)
	require.False(t, done)
	tab.Expire(int64(5*time.Second+time.Second/2), int64(time.Second+time.Second/2), fail)

	var got []RootID
	tab.Expire(int64(7*time.Second), int64(3*time.Second), func(id RootID, r Reason) {
		assert.Equal(t, Timeout, r)
		got = append(got, id)
	})
	assert.ElementsMatch(t, []RootID{root, other}, got, "a second of progress later both time out")
}

func TestHardCapBeatsTimeout(t *testing.T) {
	tab := newTestTable(t, Config{ProgressTimeout: time.Second, HardTimeout: time.Second})
	_, _, err := tab.Init(0, 1)
	require.NoError(t, err)
	var got []Reason
	tab.Expire(int64(2*time.Second), int64(2*time.Second), func(_ RootID, r Reason) { got = append(got, r) })
	assert.Equal(t, []Reason{Expired}, got)
}

func TestStaleIDs(t *testing.T) {
	tab := newTestTable(t, Config{Capacity: 1})
	first, _, err := tab.Init(0, 7)
	require.NoError(t, err)
	done, ok := tab.Update(0, first, 7)
	require.True(t, done && ok)

	second, _, err := tab.Init(0, 9) // reuses the only slot
	require.NoError(t, err)
	require.Equal(t, first.Slot(), second.Slot())
	require.NotEqual(t, first, second)

	tests := map[string]RootID{
		"finished":          first,
		"zero":              0,
		"slot out of range": makeID(1, second.gen()),
		"free generation":   makeID(0, second.gen()+1),
		"never issued":      makeID(0, second.gen()+2),
	}
	for name, id := range tests {
		t.Run(name, func(t *testing.T) {
			done, ok := tab.Update(0, id, 9)
			assert.False(t, done)
			assert.False(t, ok)
			assert.False(t, tab.Fail(id))
			assert.Equal(t, 1, tab.Len())
		})
	}
	done, ok = tab.Update(0, second, 9)
	assert.True(t, done && ok, "live tree untouched by stale acks")
	assert.False(t, tab.Fail(second), "fail after done")
}

func TestFail(t *testing.T) {
	tab := newTestTable(t, Config{})
	id, _, err := tab.Init(0, 3)
	require.NoError(t, err)
	assert.True(t, tab.Fail(id))
	assert.False(t, tab.Fail(id))
	_, ok := tab.Update(0, id, 3)
	assert.False(t, ok)
	assert.Zero(t, tab.Len())
}

func TestFullAndReuse(t *testing.T) {
	const capacity = 3000 // above reuseDelay, to exercise growth and reuse
	tab := newTestTable(t, Config{Capacity: capacity})
	r := rand.New(rand.NewPCG(1, 2))
	var live []RootID
	issued := map[RootID]bool{}
	for range 20 * capacity {
		if len(live) == capacity || (len(live) > 0 && r.IntN(2) == 0) {
			i := r.IntN(len(live))
			require.True(t, tab.Fail(live[i]))
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
			continue
		}
		id, done, err := tab.Init(0, r.Uint64()|1)
		require.NoError(t, err)
		require.False(t, done)
		require.False(t, issued[id], "id %x issued twice", id)
		require.Less(t, id.Slot(), capacity)
		issued[id] = true
		live = append(live, id)
	}
	for len(live) < capacity {
		id, _, err := tab.Init(0, 1)
		require.NoError(t, err)
		live = append(live, id)
	}
	_, _, err := tab.Init(0, 1)
	require.ErrorIs(t, err, ErrFull)
	assert.Equal(t, capacity, tab.Len())
	assert.Equal(t, capacity, tab.Cap())
	require.NoError(t, checkTable(tab))
}

func TestSlotReuseIsDelayed(t *testing.T) {
	tab := newTestTable(t, Config{})
	id, _, err := tab.Init(0, 1)
	require.NoError(t, err)
	require.True(t, tab.Fail(id))
	for range reuseDelay {
		next, _, err := tab.Init(0, 1)
		require.NoError(t, err)
		require.NotEqual(t, id.Slot(), next.Slot())
		require.True(t, tab.Fail(next))
	}
	next, _, err := tab.Init(0, 1)
	require.NoError(t, err)
	assert.Equal(t, id.Slot(), next.Slot(), "first freed, first reused")
	require.NoError(t, checkTable(tab))
}

func TestExpireReentrant(t *testing.T) {
	// fn may start replays in the table it is called from.
	tab := newTestTable(t, Config{Capacity: 4, ProgressTimeout: time.Second})
	for range 4 {
		_, _, err := tab.Init(0, 1)
		require.NoError(t, err)
	}
	now := int64(2 * time.Second)
	var replays int
	tab.Expire(now, now, func(RootID, Reason) {
		_, _, err := tab.Init(now, 1)
		require.NoError(t, err)
		replays++
	})
	assert.Equal(t, 4, replays)
	assert.Equal(t, 4, tab.Len())
	require.NoError(t, checkTable(tab))
}

func TestTimeoutResolution(t *testing.T) {
	tests := []struct {
		timeout time.Duration
		shift   uint8
		ticks   int32
	}{
		{1, 0, 1},
		{255, 0, 255},
		{512, 1, 256},
		{1023, 1, 512},
		{time.Second, 21, 477},
		{30 * time.Second, 26, 448},
		{5 * time.Minute, 30, 280},
	}
	for _, tt := range tests {
		shift, ticks := resolution(tt.timeout)
		assert.Equal(t, tt.shift, shift, "%v", tt.timeout)
		assert.Equal(t, tt.ticks, ticks, "%v", tt.timeout)
	}
}

func TestNeverEarlyAlwaysClose(t *testing.T) {
	// Expire fires after the timeout, and within 1.2% of it, wherever the
	// tree starts relative to the tick boundaries, negative times included.
	timeouts := []time.Duration{1, 300, time.Millisecond, 30 * time.Second, 5 * time.Minute}
	r := rand.New(rand.NewPCG(3, 4))
	for _, d := range timeouts {
		for range 200 {
			tab := newTestTable(t, Config{ProgressTimeout: d, HardTimeout: 1000 * d})
			start := r.Int64N(1<<62) - 1<<61
			_, _, err := tab.Init(start, 1)
			require.NoError(t, err)
			tab.Expire(start+int64(d), start+int64(d), func(RootID, Reason) {
				t.Fatalf("timeout %v: early", d)
			})
			fired := false
			late := start + int64(d) + int64(d)*3/256 + 3
			tab.Expire(late, late, func(RootID, Reason) { fired = true })
			require.True(t, fired, "timeout %v: not fired in time", d)
		}
	}
}

func TestConfig(t *testing.T) {
	tests := map[string]struct {
		cfg     Config
		wantErr bool
	}{
		"zero is defaults":  {Config{}, false},
		"capacity 1":        {Config{Capacity: 1}, false},
		"max capacity":      {Config{Capacity: MaxCapacity}, false},
		"negative capacity": {Config{Capacity: -1}, true},
		"negative progress": {Config{ProgressTimeout: -time.Second}, true},
		"negative hard":     {Config{HardTimeout: -time.Second}, true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			tab, err := NewTable(tt.cfg)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrInvalidConfig)
				assert.Nil(t, tab)
				return
			}
			require.NoError(t, err)
			assert.Zero(t, tab.Len())
		})
	}
	tab := newTestTable(t, Config{})
	assert.Equal(t, DefaultCapacity, tab.Cap())
}

func TestReasonString(t *testing.T) {
	want := map[Reason]string{
		0:        "unspecified",
		Failed:   "failed",
		Panic:    "panic",
		Timeout:  "timeout",
		Expired:  "expired",
		Rejected: "rejected",
		Shutdown: "shutdown",
		200:      "Reason(200)",
	}
	for r, s := range want {
		assert.Equal(t, s, r.String())
	}
}

func TestEdgeIDs(t *testing.T) {
	a, b := NewEdgeIDs(), NewEdgeIDs()
	seen := map[uint64]bool{}
	for range 1000 {
		for _, id := range []uint64{a.Next(), b.Next()} {
			require.NotZero(t, id)
			require.False(t, seen[id])
			seen[id] = true
		}
	}
}
