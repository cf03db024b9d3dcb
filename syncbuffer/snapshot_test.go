package syncbuffer

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/state"
)

func encItem(w *state.Writer, it *item) error {
	w.PutVarint(it.K.Time)
	w.PutUvarint(uint64(it.K.Origin))
	w.PutUvarint(it.K.Seq)
	w.PutVarint(it.K.High)
	w.PutBool(it.Meta)
	w.PutVarint(int64(it.ID))
	return nil
}

func decItem(r *state.Reader) (item, error) {
	it := item{K: Key{Time: r.ReadVarint(), Origin: uint32(r.ReadUvarint()), Seq: r.ReadUvarint(), High: r.ReadVarint()}}
	it.Meta, it.ID = r.ReadBool(), int(r.ReadVarint())
	return it, r.Err()
}

// itemSize gives items different sizes, for Bytes and CapacityBytes.
func itemSize(it *item) int { return 1 + it.ID%9 }

// newMeasured returns an empty buffer of s that measures its items.
func newMeasured(t require.TestingT, s script) *Buffer[item] {
	b, err := New(s.cfg, s.inputs, itemKey, itemMeta)
	require.NoError(t, err)
	b.MeasureWith(itemSize)
	return b
}

func snapshot(t require.TestingT, b *Buffer[item]) []byte {
	var w state.Writer
	require.NoError(t, b.Snapshot(&w, encItem))
	return w.Bytes()
}

// restore returns a new buffer of s restored from data, requiring that it
// reads data to the end.
func restore(t require.TestingT, s script, data []byte) *Buffer[item] {
	b := newMeasured(t, s)
	r := state.NewReader(data)
	require.NoError(t, b.Restore(r, decItem))
	require.Zero(t, r.Len(), "bytes left")
	return b
}

// observed is what a buffer shows of itself without being changed in
// behaviour.
type observed struct {
	Watermark   int64
	HasWM       bool
	Len         int
	Bytes       int64
	Full        bool
	Stats       Stats
	Released    Key
	HasReleased bool
	Min         item
	HasMin      bool
	Snapshot    []byte
}

// observe returns what b shows at now, with its snapshot if whole.
func observe(t require.TestingT, b *Buffer[item], now int64, whole bool) observed {
	o := observed{Len: b.Len(), Bytes: b.Bytes(), Full: b.Full(), Stats: b.Stats()}
	if whole {
		o.Snapshot = snapshot(t, b)
	}
	o.Watermark, o.HasWM = b.Watermark(now)
	o.Released, o.HasReleased = b.Released()
	o.Min, o.HasMin = b.Min()
	return o
}

// checkRestore plays s on a buffer, restores a snapshot of it taken
// before op at into a second buffer, plays the rest on both and requires
// the same results from both throughout: classifications, releases,
// watermarks, Len, Bytes, Full, counters and the snapshots they write.
//
// The model's announcements are honest, so that their promises never
// matter; lift, if not nil, raises the promise of the announcement at
// op i by lift[i], and an odd lift announces no high-water mark, so that
// promises hold the watermark and inputs break them.
func checkRestore(t require.TestingT, s script, at int, lift []int64) {
	bufs := []*Buffer[item]{newMeasured(t, s)}
	p := newPlayer(bufs[0].Config().Window, s.inputs)
	var step int
	// same requires f to give every buffer's result the first one's.
	same := func(what string, f func(b *Buffer[item]) any) {
		want := f(bufs[0])
		for _, b := range bufs[1:] {
			require.Equal(t, want, f(b), "%s, op %d at %d", what, step, p.now)
		}
	}
	release := func(limit int) {
		same("release", func(b *Buffer[item]) any {
			var out []item
			b.Release(p.now, func(it item) bool {
				out = append(out, it)
				return len(out) != limit
			})
			return out
		})
	}
	c := calls{
		push: func(input int, it item) {
			same("push", func(b *Buffer[item]) any { return b.Push(input, it, p.now) })
		},
		release: release,
		end: func(input int) {
			same("end", func(b *Buffer[item]) any { b.EndOfStream(input); return nil })
		},
		advance: func(input int, high, promise int64) {
			if lift != nil {
				promise += lift[step]
				if lift[step]%2 == 1 {
					high = math.MinInt64
				}
			}
			same("advance", func(b *Buffer[item]) any { b.Advance(input, high, promise, p.now); return nil })
		},
	}
	for step = 0; step <= len(s.ops); step++ {
		if step == at {
			bufs = append(bufs, restore(t, s, snapshot(t, bufs[0])))
			same("restored", func(b *Buffer[item]) any { return observe(t, b, p.now, true) })
		}
		if step < len(s.ops) {
			p.play(s.ops[step], c)
			// Snapshots after pushes too would make long scripts slow.
			whole := s.ops[step].kind == opRelease
			same("state", func(b *Buffer[item]) any { return observe(t, b, p.now, whole) })
		}
	}
	for i := range s.inputs {
		c.end(i)
	}
	release(0)
	same("end", func(b *Buffer[item]) any { return observe(t, b, p.now, true) })
	require.Zero(t, bufs[0].Len())
}

func TestRestoreBehavesAsTheOriginal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := drawScript(t)
		// Longer scripts than the model's, so that snapshots hold more.
		s.ops = rapid.SliceOfN(opGen(s.inputs), 100, 600).Draw(t, "more ops")
		// Small capacities, so that Full changes along the way.
		s.cfg.Capacity = rapid.IntRange(1, 30).Draw(t, "capacity")
		s.cfg.CapacityBytes = rapid.Int64Range(1, 150).Draw(t, "capacity bytes")
		lift := rapid.SliceOfN(rapid.Int64Range(0, 2*int64(s.cfg.Window)+20), len(s.ops), len(s.ops)).Draw(t, "lift")
		checkRestore(t, s, rapid.IntRange(0, len(s.ops)).Draw(t, "snapshot at"), lift)
	})
}

// Buckets of many items, sorted ones among them, snapshotted.
func TestRestoreLargeBuckets(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		window := rapid.SampledFrom([]int64{10_000, 1 << 22}).Draw(t, "window")
		s := script{inputs: rapid.IntRange(1, 2).Draw(t, "inputs"), cfg: Config{Window: time.Duration(window), IdleTimeout: -1, FutureBound: -1}}
		for range rapid.IntRange(1, 3).Draw(t, "rounds") {
			for range rapid.IntRange(100, 400).Draw(t, "pushes") {
				s.ops = append(s.ops, op{kind: opPush, input: rapid.IntRange(0, s.inputs-1).Draw(t, "input"), delta: rapid.Int64Range(-window, 0).Draw(t, "delta")})
			}
			s.ops = append(s.ops, op{kind: opAdvance, delta: rapid.Int64Range(0, window).Draw(t, "advance")}, op{kind: opRelease, delta: rapid.Int64Range(0, 3).Draw(t, "limit")})
		}
		checkRestore(t, s, rapid.IntRange(0, len(s.ops)).Draw(t, "snapshot at"), nil)
	})
}

// sample returns a snapshot of a buffer of s that holds data and meta
// items, has released some and remembers meta identities.
func sample(t require.TestingT, s script) []byte {
	b := newMeasured(t, s)
	for i, tm := range []int64{50, 10, 30, 20, 40, 60, 70} {
		b.Push(i%s.inputs, data(tm, uint32(i%s.inputs), uint64(i)), 0)
	}
	for i := range s.inputs {
		b.Push(i, meta(35, 9, 1), 0)
	}
	b.Push(0, meta(65, 9, 2), 0)
	b.Advance(0, 100, 15, 0)
	b.Release(0, func(item) bool { return true })
	require.NotZero(t, b.Len())
	require.NotZero(t, b.Stats().MetaRemembered)
	_, released := b.Released()
	require.True(t, released)
	return snapshot(t, b)
}

var sampleScript = script{inputs: 2, cfg: Config{Window: 20, IdleTimeout: -1}}

// rawSnapshot writes a snapshot of one input, its mark at 5, nothing
// released, no counters, the meta identities given above horizon, and n
// items written by items.
func rawSnapshot(horizon int64, metas []Key, n int, items func(w *state.Writer)) []byte {
	var w state.Writer
	w.PutUvarint(snapshotVersion)
	w.PutLen(1)
	w.PutVarint(5)
	w.PutVarint(math.MinInt64)
	w.PutVarint(0)
	w.PutBool(true)
	w.PutBool(false)
	w.PutBool(true)  // started
	w.PutBool(false) // nothing released
	for range 6 {
		w.PutUvarint(0)
	}
	w.PutVarint(math.MinInt64)
	w.PutVarint(horizon)
	w.PutLen(len(metas))
	prev := int64(math.MinInt64)
	for _, k := range metas {
		prev = putKey(&w, prev, k)
	}
	w.PutLen(n)
	items(&w)
	return w.Bytes()
}

// snapshotOf is rawSnapshot with items written as Snapshot writes them.
func snapshotOf(metas []Key, items ...item) []byte {
	return rawSnapshot(math.MinInt64, metas, len(items), func(w *state.Writer) {
		prev := int64(math.MinInt64)
		for _, it := range items {
			prev = putKey(w, prev, it.K)
			_ = encItem(w, &it)
		}
	})
}

func TestRestoreRefuses(t *testing.T) {
	valid := sample(t, sampleScript)
	one := data(5, 0, 1)
	var badBool state.Writer
	badBool.PutUvarint(snapshotVersion)
	badBool.PutLen(1)
	badBool.PutVarint(0)
	badBool.PutVarint(0)
	badBool.PutVarint(0)
	badBool.PutUvarint(2)

	for _, tc := range []struct {
		name   string
		inputs int
		data   []byte
		dec    func(*state.Reader) (item, error)
		want   error
	}{
		{"version", 2, append([]byte{2}, valid[1:]...), decItem, ErrSnapshotVersion},
		{"fewer inputs", 1, valid, decItem, ErrSnapshotInputs},
		{"more inputs", 3, valid, decItem, ErrSnapshotInputs},
		{"boolean 2", 1, badBool.Bytes(), decItem, state.ErrMalformed},
		{"items out of order", 1, snapshotOf(nil, data(5, 0, 2), data(5, 0, 1)), decItem, state.ErrMalformed},
		{"item's key not its own", 1, snapshotOf(nil, one),
			func(r *state.Reader) (item, error) {
				it, err := decItem(r)
				it.K.Seq++
				return it, err
			}, state.ErrMalformed},
		{"decoder's error", 1, snapshotOf(nil, one),
			func(*state.Reader) (item, error) { return item{}, errBadItem }, errBadItem},
		{"meta twice", 1, snapshotOf([]Key{{Time: 1, Seq: 1}, {Time: 2, Seq: 1}}), decItem, state.ErrMalformed},
		{"meta out of order", 1, snapshotOf([]Key{{Time: 2, Seq: 2}, {Time: 1, Seq: 1}}), decItem, state.ErrMalformed},
		{"meta below the horizon", 1, rawSnapshot(3, []Key{{Time: 2, Seq: 1}}, 0, func(*state.Writer) {}), decItem, state.ErrMalformed},
		{"origin beyond 32 bits", 1, rawSnapshot(math.MinInt64, nil, 1, func(w *state.Writer) {
			w.PutUvarint(uint64(one.K.Time) + 1<<63)
			w.PutUvarint(1 << 32)
			w.PutUvarint(one.K.Seq)
			_ = encItem(w, &one)
		}), decItem, state.ErrMalformed},
		{"time beyond int64", 1, rawSnapshot(math.MinInt64, nil, 2, func(w *state.Writer) {
			putKey(w, math.MinInt64, one.K)
			_ = encItem(w, &one)
			w.PutUvarint(math.MaxUint64)
			w.PutUvarint(0)
			w.PutUvarint(2)
			_ = encItem(w, &one)
		}), decItem, state.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(sampleScript.cfg, tc.inputs, itemKey, itemMeta)
			require.NoError(t, err)
			err = b.Restore(state.NewReader(tc.data), tc.dec)
			require.ErrorIs(t, err, tc.want)
			require.Zero(t, b.Len())
			_, ok := b.Watermark(0)
			require.False(t, ok, "the buffer is not left as it was")
		})
	}
}

var errBadItem = errors.New("bad item")

func TestRestoreIntoBufferInUse(t *testing.T) {
	valid := sample(t, sampleScript)
	for name, use := range map[string]func(b *Buffer[item]){
		"pushed":   func(b *Buffer[item]) { b.Push(0, data(1, 0, 1), 0) },
		"advanced": func(b *Buffer[item]) { b.Advance(0, 1, 0, 0) },
		"released": func(b *Buffer[item]) { b.Release(0, func(item) bool { return true }) },
		"ended":    func(b *Buffer[item]) { b.EndOfStream(1) },
	} {
		b := newMeasured(t, sampleScript)
		use(b)
		require.ErrorIs(t, b.Restore(state.NewReader(valid), decItem), ErrNotEmpty, name)
	}
}

// Every prefix of a snapshot is refused, and leaves the buffer ready for
// the whole snapshot.
func TestRestoreTruncated(t *testing.T) {
	valid := sample(t, sampleScript)
	want := observe(t, restore(t, sampleScript, valid), 0, true)
	b := newMeasured(t, sampleScript)
	for n := range len(valid) {
		require.ErrorIs(t, b.Restore(state.NewReader(valid[:n]), decItem), state.ErrTruncated, "%d of %d bytes", n, len(valid))
	}
	require.NoError(t, b.Restore(state.NewReader(valid), decItem))
	require.Equal(t, want, observe(t, b, 0, true))
}

// Restore reads the snapshot and no further.
func TestRestoreLeavesWhatFollows(t *testing.T) {
	data := append(sample(t, sampleScript), 42)
	r := state.NewReader(data)
	require.NoError(t, newMeasured(t, sampleScript).Restore(r, decItem))
	require.Equal(t, 1, r.Len())
}

func FuzzRestore(f *testing.F) {
	f.Add(sample(f, sampleScript))
	f.Add(snapshotOf([]Key{{Time: 1, Seq: 1}}, data(5, 0, 1), data(7, 1, 0)))
	f.Fuzz(func(t *testing.T, data []byte) {
		b := newMeasured(t, sampleScript)
		if b.Restore(state.NewReader(data), decItem) != nil {
			return
		}
		// A restored buffer is consistent: it writes what it restores to,
		// and drains.
		again := snapshot(t, b)
		require.Equal(t, again, snapshot(t, restore(t, sampleScript, again)))
		held := b.Len()
		for i := range sampleScript.inputs {
			b.EndOfStream(i)
		}
		n := 0
		b.Release(0, func(item) bool { n++; return true })
		require.Equal(t, held, n)
		require.Zero(t, b.Len())
		require.Zero(t, b.Bytes())
	})
}

// A copy of a forgotten meta identity stays Late after a restore, before
// any release has set the horizon again; the random scripts seldom push
// one in that gap.
func TestRestoreRemembersMetaHorizon(t *testing.T) {
	s := script{inputs: 1, cfg: Config{MetaRetention: 1, IdleTimeout: -1}}
	b := newMeasured(t, s)
	require.Equal(t, Buffered, b.Push(0, meta(10, 9, 1), 0))
	require.Equal(t, Buffered, b.Push(0, data(20, 0, 1), 0))
	require.Len(t, drain(b, 0), 1)
	require.Zero(t, b.Stats().MetaRemembered, "the identity is forgotten")
	restored := restore(t, s, snapshot(t, b))
	require.Equal(t, Late, b.Push(0, meta(10, 9, 1), 0))
	require.Equal(t, Late, restored.Push(0, meta(10, 9, 1), 0))
}

// Items with equal keys, which leave in arrival order, keep that order
// across a restore, also against items pushed after it.
func TestRestoreKeepsEqualKeysInArrivalOrder(t *testing.T) {
	s := script{inputs: 2, cfg: Config{Window: 10, IdleTimeout: -1}}
	b := newMeasured(t, s)
	push := func(b *Buffer[item], id int) {
		require.Equal(t, Buffered, b.Push(id%2, item{K: Key{Time: 5, Origin: 1, Seq: 1}, ID: id}, 0))
	}
	for id := range 4 {
		push(b, id)
	}
	restored := restore(t, s, snapshot(t, b))
	for _, b := range []*Buffer[item]{b, restored} {
		push(b, 4)
		b.EndOfStream(0)
		b.EndOfStream(1)
		var ids []int
		b.Release(0, func(it item) bool {
			ids = append(ids, it.ID)
			return true
		})
		require.Equal(t, []int{0, 1, 2, 3, 4}, ids)
	}
}
