package acker

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// modelRoot is the reference model of a pending tree: its open edges as a
// set, and its times in nanoseconds as the Table documents them.
type modelRoot struct {
	open     map[uint64]bool
	born     int64
	progress int64
}

// modelTuple is a tuple in flight: its table value and model edges per root.
type modelTuple struct {
	ids    map[RootID]uint64
	edges  map[RootID][]uint64
	ackVal uint64
}

type model struct {
	tab      *Table
	edges    *EdgeIDs
	progress time.Duration
	hard     time.Duration
	roots    map[RootID]*modelRoot
	outcomes map[RootID]int
	tuples   []*modelTuple
	// now and pnow are the stream and progress clocks, lag their difference
	// at the last Expire, lastExpire the stream time then.
	now, pnow, lag, lastExpire int64
}

const maxTuples = 64

// TestTableModel checks the table against the model through random
// topologies: a tree completes exactly when its last open edge is acked,
// acks for finished roots are refused, timeouts are never early and at most
// 1.2% late, and every root ends exactly once.
func TestTableModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pt := time.Duration(rapid.Int64Range(256, int64(time.Millisecond)).Draw(rt, "progressTimeout"))
		m := &model{
			progress: pt,
			hard:     pt * time.Duration(rapid.IntRange(1, 10).Draw(rt, "hardFactor")),
			edges:    seededEdgeIDs(rapid.Uint64().Draw(rt, "seed")),
			roots:    map[RootID]*modelRoot{},
			outcomes: map[RootID]int{},
		}
		tab, err := NewTable(Config{
			Capacity:        rapid.IntRange(1, 40).Draw(rt, "capacity"),
			ProgressTimeout: m.progress,
			HardTimeout:     m.hard,
		})
		require.NoError(rt, err)
		m.tab = tab
		rt.Repeat(map[string]func(*rapid.T){
			"spout":   m.spout,
			"process": m.process,
			"fail":    m.fail,
			"advance": m.advance,
			"expire":  func(*rapid.T) { m.expire(rt) },
			"": func(rt *rapid.T) {
				require.Equal(rt, len(m.roots), m.tab.Len())
				require.NoError(rt, checkTable(m.tab))
			},
		})
		for _, id := range slices.Sorted(maps.Keys(m.roots)) {
			require.True(rt, m.tab.Fail(id)) // shutdown
			m.end(id)
		}
		require.Zero(rt, m.tab.Len())
		for id, n := range m.outcomes {
			require.Equal(rt, 1, n, "root %x ended %d times", id, n)
		}
	})
}

func (m *model) end(id RootID) {
	m.outcomes[id]++
	delete(m.roots, id)
}

func (m *model) spout(rt *rapid.T) {
	n := rapid.IntRange(0, 3).Draw(rt, "children")
	edges := make([]uint64, n)
	var xor uint64
	for i := range edges {
		edges[i] = m.edges.Next()
		xor ^= edges[i]
	}
	id, done, err := m.tab.Init(m.now, xor)
	switch {
	case n == 0:
		require.NoError(rt, err)
		require.True(rt, done)
		return
	case len(m.roots) == m.tab.Cap():
		require.ErrorIs(rt, err, ErrFull)
		return
	}
	require.NoError(rt, err)
	require.False(rt, done)
	_, seen := m.outcomes[id]
	require.False(rt, seen, "id %x reissued", id)
	m.outcomes[id] = 0
	r := &modelRoot{open: map[uint64]bool{}, born: m.now, progress: m.now - m.lag}
	m.roots[id] = r
	for _, e := range edges {
		r.open[e] = true
		m.addTuple(&modelTuple{ids: map[RootID]uint64{id: e}, edges: map[RootID][]uint64{id: {e}}})
	}
}

// addTuple puts a tuple in flight; beyond maxTuples it is lost, and its
// roots will time out.
func (m *model) addTuple(x *modelTuple) {
	if len(m.tuples) < maxTuples {
		m.tuples = append(m.tuples, x)
	}
}

// process takes a tuple, emits children anchored to it (and maybe to
// another tuple in flight, of any root) and acks it.
func (m *model) process(rt *rapid.T) {
	if len(m.tuples) == 0 {
		rt.Skip("no tuple in flight")
	}
	i := rapid.IntRange(0, len(m.tuples)-1).Draw(rt, "tuple")
	x := m.tuples[i]
	m.tuples = slices.Delete(m.tuples, i, i+1)
	anchors := []*modelTuple{x}
	if len(m.tuples) > 0 && rapid.Bool().Draw(rt, "multiAnchor") {
		anchors = append(anchors, m.tuples[rapid.IntRange(0, len(m.tuples)-1).Draw(rt, "other")])
	}
	if rapid.Bool().Draw(rt, "anchorTwice") {
		anchors = append(anchors, x)
	}
	for range rapid.IntRange(0, 2).Draw(rt, "children") {
		c := &modelTuple{ids: map[RootID]uint64{}, edges: map[RootID][]uint64{}}
		for _, a := range anchors {
			e := m.edges.Next()
			a.ackVal ^= e
			for r := range a.ids {
				c.ids[r] ^= e
				c.edges[r] = append(c.edges[r], e)
				if mr := m.roots[r]; mr != nil {
					mr.open[e] = true
				}
			}
		}
		m.addTuple(c)
	}
	for _, r := range slices.Sorted(maps.Keys(x.ids)) {
		done, ok := m.tab.Update(m.now, r, x.ids[r]^x.ackVal)
		mr := m.roots[r]
		if mr == nil {
			require.False(rt, ok, "ack for ended root %x accepted", r)
			continue
		}
		require.True(rt, ok)
		for _, e := range x.edges[r] {
			delete(mr.open, e)
		}
		require.Equal(rt, len(mr.open) == 0, done, "root %x: %d open edges", r, len(mr.open))
		if done {
			m.end(r)
		} else {
			mr.progress = m.now - m.lag
		}
	}
}

func (m *model) fail(rt *rapid.T) {
	ids := slices.Sorted(maps.Keys(m.outcomes))
	if len(ids) == 0 {
		rt.Skip("no root")
	}
	id := rapid.SampledFrom(ids).Draw(rt, "root")
	_, pending := m.roots[id]
	require.Equal(rt, pending, m.tab.Fail(id))
	if pending {
		m.end(id)
	}
}

// advance moves the stream clock, and the progress clock unless paused.
func (m *model) advance(rt *rapid.T) {
	d := rapid.Int64Range(0, int64(m.progress)).Draw(rt, "advance")
	m.now += d
	if !rapid.Bool().Draw(rt, "paused") {
		m.pnow += d
	}
	if m.now-m.lastExpire > 20*int64(m.progress) {
		m.expire(rt) // stay well inside the table's exact range
	}
}

func (m *model) expire(rt *rapid.T) {
	slack := func(d time.Duration) int64 { return int64(d) + int64(d)*3/256 + 3 }
	reported := map[RootID]Reason{}
	m.tab.Expire(m.now, m.pnow, func(id RootID, r Reason) {
		_, dup := reported[id]
		require.False(rt, dup, "root %x reported twice", id)
		reported[id] = r
	})
	m.lag, m.lastExpire = m.now-m.pnow, m.now
	for _, id := range slices.Sorted(maps.Keys(m.roots)) {
		mr := m.roots[id]
		age, idle := m.now-mr.born, m.pnow-mr.progress
		r, ok := reported[id]
		switch {
		case !ok:
			require.LessOrEqual(rt, age, slack(m.hard), "root %x not expired", id)
			require.LessOrEqual(rt, idle, slack(m.progress), "root %x not timed out", id)
			continue
		case r == Expired:
			require.Greater(rt, age, int64(m.hard), "root %x expired early", id)
		case r == Timeout:
			require.Greater(rt, idle, int64(m.progress), "root %x timed out early", id)
			require.LessOrEqual(rt, age, slack(m.hard), "root %x timed out, not expired", id)
		default:
			rt.Fatalf("root %x: reason %v", id, r)
		}
		m.end(id)
		delete(reported, id)
	}
	require.Empty(rt, reported, "unknown roots reported")
}
