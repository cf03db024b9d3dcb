package syncbuffer

import (
	"cmp"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// item is the test element: a key, a meta flag and an id unique per push.
type item struct {
	K    Key
	Meta bool
	ID   int
}

func itemKey(it *item) Key   { return it.K }
func itemMeta(it *item) bool { return it.Meta }

// model is the reference: the semantics of Buffer written as plainly as
// possible, over an unsorted slice sorted at each release.
type model struct {
	cfg         Config
	inputs      []modelInput
	started     bool
	pending     []modelEntry
	arrivals    int
	released    Key
	hasReleased bool
	seen        map[[2]uint64]int64 // meta identity -> event time
	horizon     int64
}

type modelInput struct {
	high, promise, last int64
	sent, ended         bool
}

type modelEntry struct {
	it      item
	arrival int
}

func newModel(cfg Config, inputs int) *model {
	cfg.setDefaults()
	m := &model{
		cfg:     cfg,
		inputs:  make([]modelInput, inputs),
		seen:    map[[2]uint64]int64{},
		horizon: math.MinInt64,
	}
	for i := range m.inputs {
		m.inputs[i].promise = math.MinInt64
	}
	return m
}

func (m *model) start(now int64) {
	if !m.started {
		m.started = true
		for i := range m.inputs {
			m.inputs[i].last = now
		}
	}
}

func (in *modelInput) raise(t int64) {
	if !in.sent || t > in.high {
		in.high = t
	}
	in.sent = true
}

func (m *model) push(input int, it item, now int64) Status {
	m.start(now)
	in := &m.inputs[input]
	if m.cfg.FutureBound >= 0 && it.K.Time > now+int64(m.cfg.FutureBound) {
		return Invalid
	}
	in.last = now
	id := [2]uint64{uint64(it.K.Origin), it.K.Seq}
	if it.Meta {
		if _, ok := m.seen[id]; ok {
			return Duplicate
		}
		if it.K.Time < m.horizon {
			return Late
		}
		m.seen[id] = it.K.Time
	} else {
		in.raise(max(it.K.High, it.K.Time))
		if it.K.Time < in.high-int64(m.cfg.Window) {
			return Late
		}
	}
	if m.hasReleased && it.K.Less(m.released) {
		return Behind
	}
	m.pending = append(m.pending, modelEntry{it, m.arrivals})
	m.arrivals++
	return Buffered
}

func (m *model) advance(input int, high, promise, now int64) {
	m.start(now)
	in := &m.inputs[input]
	in.last = now
	in.raise(high)
	in.promise = max(in.promise, promise)
}

func (m *model) watermark(now int64) (int64, bool) {
	lowest, highest := int64(math.MaxInt64), int64(math.MinInt64)
	newest, life := int64(math.MinInt64), int64(math.MinInt64)
	active, allEnded := false, true
	for _, in := range m.inputs {
		if in.ended {
			continue
		}
		allEnded = false
		if in.sent {
			newest = max(newest, in.high)
		}
		life = max(life, in.last)
		bound, known := in.promise, in.promise != math.MinInt64
		if in.sent {
			bound, known = max(in.high-int64(m.cfg.Window)-1, in.promise), true
		}
		if known {
			highest = max(highest, bound)
		}
		if m.started && m.cfg.IdleTimeout >= 0 && now-in.last > int64(m.cfg.IdleTimeout) {
			continue
		}
		if !known {
			return 0, false
		}
		active = true
		lowest = min(lowest, bound)
	}
	switch {
	case allEnded:
		return math.MaxInt64, true
	case active:
		return lowest, true
	case newest == math.MinInt64:
		return max(highest, now-int64(m.cfg.IdleTimeout)), true
	}
	// Event time goes on from the newest event by the time that passed.
	return max(highest, newest+(now-life)-int64(m.cfg.IdleTimeout)), true
}

// release returns what Release would hand out, stopping after limit items
// when limit > 0.
func (m *model) release(now int64, limit int) []item {
	m.start(now)
	wm, ok := m.watermark(now)
	if !ok {
		return nil
	}
	if wm != math.MaxInt64 {
		m.horizon = max(m.horizon, wm-int64(m.cfg.MetaRetention))
	} else {
		m.horizon = math.MaxInt64
	}
	for id, t := range m.seen {
		if t < m.horizon {
			delete(m.seen, id)
		}
	}
	slices.SortFunc(m.pending, func(a, b modelEntry) int {
		ka, kb := a.it.K, b.it.K
		ka.High, kb.High = 0, 0
		if ka != kb {
			if ka.Less(kb) {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.arrival, b.arrival)
	})
	var out []item
	for len(m.pending) > 0 && m.pending[0].it.K.Time <= wm {
		out = append(out, m.pending[0].it)
		m.released, m.hasReleased = m.pending[0].it.K, true
		m.pending = m.pending[1:]
		if len(out) == limit {
			break
		}
	}
	return out
}

type opKind uint8

const (
	opPush     opKind = iota // data item at now+delta
	opPushSame               // data item with the key of input's previous one
	opMeta                   // new meta identity at now+delta
	opCopyMeta               // another copy of an earlier meta identity
	opWild                   // data item far in the future
	opRelease                // Release, stopping after delta items if delta > 0
	opAdvance                // stream clock forward by delta
	opEnd                    // input ends
	opAnnounce               // input announces its high-water mark and a promise
	opKinds
)

type op struct {
	kind  opKind
	input int
	delta int64
	pick  int
}

// script is one run checked against the model.
type script struct {
	cfg    Config
	inputs int
	ops    []op
}

// player turns ops into calls on the buffers under test, keeping what
// later ops refer to: the stream clock, each input's sequence numbers,
// last key and high-water mark, and the meta identities sent.
type player struct {
	window int64
	now    int64
	ids    int // the items pushed, each with its own id
	seqs   []uint64
	last   []Key
	highs  []int64
	metas  []Key
}

// calls are what ops do to the buffers under test.
type calls struct {
	push    func(input int, it item)
	release func(limit int)
	end     func(input int)
	advance func(input int, high, promise int64)
}

func newPlayer(window time.Duration, inputs int) *player {
	p := &player{window: int64(window), seqs: make([]uint64, inputs), last: make([]Key, inputs), highs: make([]int64, inputs)}
	for i := range p.highs {
		p.highs[i] = math.MinInt64
	}
	return p
}

// play makes the calls of o at the stream-clock time p.now.
func (p *player) play(o op, c calls) {
	in := o.input % len(p.seqs)
	push := func(it item) {
		p.ids++
		it.ID = p.ids
		c.push(in, it)
	}
	switch o.kind {
	case opPush:
		p.seqs[in]++
		p.last[in] = Key{Time: p.now + o.delta, Origin: uint32(in), Seq: p.seqs[in]}
		p.highs[in] = max(p.highs[in], p.last[in].Time)
		p.last[in].High = p.highs[in]
		push(item{K: p.last[in]})
	case opPushSame:
		push(item{K: p.last[in]})
	case opMeta:
		k := Key{Time: p.now + o.delta, Origin: 1, Seq: uint64(len(p.metas))}
		p.metas = append(p.metas, k)
		push(item{K: k, Meta: true})
	case opCopyMeta:
		if len(p.metas) > 0 {
			push(item{K: p.metas[o.pick%len(p.metas)], Meta: true})
		}
	case opWild:
		p.seqs[in]++
		push(item{K: Key{Time: p.now + 1<<40, Origin: uint32(in), Seq: p.seqs[in]}})
	case opRelease:
		c.release(int(o.delta))
	case opAdvance:
		p.now += o.delta
	case opEnd:
		c.end(in)
	case opAnnounce:
		// An honest announcement: the promise is below anything that
		// is not late for the input.
		p.highs[in] = max(p.highs[in], p.now+o.delta)
		c.advance(in, p.highs[in], p.highs[in]-p.window-1-int64(o.pick%8))
	}
}

// run plays s on a Buffer and the model, requires the same classifications
// and output, and checks the invariants: output never goes back in time,
// every Buffered item is released exactly once, every meta identity at
// most once (exactly once if a copy was Buffered).
func (s script) run(t require.TestingT) {
	b, err := New(s.cfg, s.inputs, itemKey, itemMeta)
	require.NoError(t, err)
	m := newModel(s.cfg, s.inputs)
	p := newPlayer(b.Config().Window, s.inputs)

	var (
		buffered   = map[int]bool{}
		metaKept   = map[Key]bool{}
		released   = map[int]int{}
		metaOut    = map[Key]int{}
		lastTime   = int64(math.MinInt64)
		counts     [5]uint64
		totalRels  uint64
		behindData int
		ended      = make([]bool, s.inputs)
	)
	release := func(limit int) {
		var out []item
		b.Release(p.now, func(it item) bool {
			out = append(out, it)
			return len(out) != limit
		})
		require.Equal(t, m.release(p.now, limit), out, "release at %d", p.now)
		for _, it := range out {
			require.GreaterOrEqual(t, it.K.Time, lastTime, "output went back in time")
			lastTime = it.K.Time
			released[it.ID]++
			if it.Meta {
				metaOut[it.K]++
			}
		}
		totalRels += uint64(len(out))
	}
	c := calls{
		push: func(input int, it item) {
			got, want := b.Push(input, it, p.now), m.push(input, it, p.now)
			require.Equal(t, want, got, "push %+v from %d at %d", it, input, p.now)
			counts[got]++
			if got == Behind && !it.Meta && !ended[input] {
				behindData++
			}
			if got == Buffered {
				buffered[it.ID] = true
				if it.Meta {
					metaKept[it.K] = true
				}
			}
		},
		release: release,
		end: func(input int) {
			b.EndOfStream(input)
			m.inputs[input].ended = true
			ended[input] = true
		},
		advance: func(input int, high, promise int64) {
			b.Advance(input, high, promise, p.now)
			m.advance(input, high, promise, p.now)
		},
	}

	for _, o := range s.ops {
		p.play(o, c)
		if o.kind == opRelease {
			// Snapshot changes nothing: the model takes none and still
			// agrees. (After every push would make long scripts slow.)
			snapshot(t, b)
		}
		wm, ok := b.Watermark(p.now)
		mwm, mok := m.watermark(p.now)
		require.Equal(t, mok, ok)
		if ok {
			require.Equal(t, mwm, wm)
		}
		require.Equal(t, len(m.pending), b.Len())
	}

	for i := range s.inputs {
		b.EndOfStream(i)
		m.inputs[i].ended = true
	}
	release(0)
	require.Zero(t, b.Len())

	for id := range buffered {
		require.Equal(t, 1, released[id], "item %d", id)
	}
	require.Len(t, released, len(buffered))
	for k, n := range metaOut {
		require.Equal(t, 1, n, "meta %+v", k)
	}
	require.Len(t, metaOut, len(metaKept))

	st := b.Stats()
	require.Equal(t, uint64(p.ids), st.Pushed)
	require.Equal(t, counts[Late], st.Late)
	require.Equal(t, counts[Invalid], st.Invalid)
	require.Equal(t, counts[Duplicate], st.Duplicate)
	require.Equal(t, counts[Behind], st.Behind)
	if s.cfg.IdleTimeout < 0 {
		// Without idleness lateness alone decides: nothing is behind.
		require.Zero(t, behindData, "data behind without an idle input")
	}
	require.Equal(t, totalRels, st.Released)
	require.Equal(t, counts[Buffered], st.Released)
}

func drawScript(t *rapid.T) script {
	s := script{
		inputs: rapid.IntRange(1, 4).Draw(t, "inputs"),
		cfg: Config{
			// Windows beyond bucketsPerWindow give buckets wider than
			// one nanosecond.
			Window:        time.Duration(rapid.OneOf(rapid.Int64Range(0, 30), rapid.Int64Range(100, 400)).Draw(t, "window")),
			IdleTimeout:   time.Duration(rapid.SampledFrom([]int64{-1, 5, 20, 60, 200}).Draw(t, "idle")),
			FutureBound:   time.Duration(rapid.SampledFrom([]int64{-1, 50, 300}).Draw(t, "future")),
			MetaRetention: time.Duration(rapid.SampledFrom([]int64{0, 1, 10, 50}).Draw(t, "retention")),
		},
	}
	s.ops = rapid.SliceOfN(opGen(s.inputs), 1, 200).Draw(t, "ops")
	return s
}

// opGen generates ops of a script of inputs inputs.
func opGen(inputs int) *rapid.Generator[op] {
	return rapid.Custom(func(t *rapid.T) op {
		o := op{
			kind:  opKind(rapid.IntRange(0, int(opKinds)-1).Draw(t, "kind")),
			input: rapid.IntRange(0, inputs-1).Draw(t, "input"),
		}
		switch o.kind {
		case opPush, opMeta, opAnnounce:
			o.delta = rapid.Int64Range(-40, 60).Draw(t, "delta")
			o.pick = rapid.IntRange(0, 100).Draw(t, "pick")
		case opCopyMeta:
			o.pick = rapid.IntRange(0, 100).Draw(t, "pick")
		case opRelease:
			o.delta = rapid.Int64Range(0, 3).Draw(t, "limit")
		case opAdvance:
			o.delta = rapid.Int64Range(0, 40).Draw(t, "advance")
		case opEnd:
			// Rare, so that most runs keep their inputs open.
			if rapid.IntRange(0, 3).Draw(t, "end") != 0 {
				o.kind = opRelease
			}
		}
		return o
	})
}

func TestBufferMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { drawScript(t).run(t) })
}

// decodeScript turns fuzz bytes into a script: five bytes of configuration,
// then three bytes per operation.
func decodeScript(data []byte) (script, bool) {
	if len(data) < 5 {
		return script{}, false
	}
	s := script{inputs: 1 + int(data[0]%4)}
	s.cfg.Window = time.Duration(data[1] % 32)
	s.cfg.IdleTimeout = time.Duration(data[2]) - 1
	if data[2] == 1 {
		s.cfg.IdleTimeout = -1 // 0 would mean the default
	}
	s.cfg.FutureBound = time.Duration(data[3])*4 - 1
	s.cfg.MetaRetention = time.Duration(data[4] % 64)
	for data = data[5:]; len(data) >= 3; data = data[3:] {
		o := op{kind: opKind(data[0] % uint8(opKinds)), input: int(data[1] % 4), pick: int(data[2])}
		switch o.kind {
		case opPush, opMeta, opAnnounce:
			o.delta = int64(int8(data[2]))
		case opRelease:
			o.delta = int64(data[2] % 4)
		case opAdvance:
			o.delta = int64(data[2] % 64)
		}
		s.ops = append(s.ops, o)
	}
	return s, true
}

func FuzzBuffer(f *testing.F) {
	f.Add([]byte{1, 10, 30, 50, 5, 0, 0, 5, 0, 1, 3, 6, 0, 1, 5, 0, 0})
	f.Add([]byte{2, 0, 0, 0, 0, 2, 0, 0, 3, 1, 0, 0, 0, 20, 6, 0, 50, 5, 0, 0, 4, 1, 0})
	f.Add([]byte{3, 5, 10, 1, 3, 0, 0, 250, 0, 1, 10, 6, 2, 30, 5, 1, 1, 7, 0, 0, 5, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, ok := decodeScript(data)
		if !ok {
			t.Skip()
		}
		s.run(t)
	})
}

// Buckets of hundreds of entries, sorted by spreadSort, against the model:
// many pushes spread over a wide window, few releases.
func TestBufferMatchesModelLargeBuckets(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		window := rapid.SampledFrom([]int64{10_000, 1 << 22}).Draw(t, "window")
		s := script{inputs: rapid.IntRange(1, 2).Draw(t, "inputs"), cfg: Config{Window: time.Duration(window), IdleTimeout: -1, FutureBound: -1}}
		for range rapid.IntRange(1, 4).Draw(t, "rounds") {
			// A narrow spread fills few buckets.
			spread := rapid.SampledFrom([]int64{window / bucketsPerWindow, window}).Draw(t, "spread")
			for range rapid.IntRange(256, 1024).Draw(t, "pushes") {
				in := rapid.IntRange(0, s.inputs-1).Draw(t, "input")
				s.ops = append(s.ops, op{kind: opPush, input: in, delta: rapid.Int64Range(-spread, 0).Draw(t, "delta")})
				if rapid.IntRange(0, 15).Draw(t, "same") == 0 {
					s.ops = append(s.ops, op{kind: opPushSame, input: in})
				}
			}
			s.ops = append(s.ops, op{kind: opAdvance, delta: rapid.Int64Range(0, window).Draw(t, "advance")}, op{kind: opRelease})
		}
		s.run(t)
	})
}
