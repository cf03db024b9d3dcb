package acker

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// seededEdgeIDs returns a deterministic generator for reproducible tests.
func seededEdgeIDs(seed uint64) *EdgeIDs {
	return &EdgeIDs{state: seed}
}

// checkTable verifies the table's internal invariants: the free queue links
// exactly the free slots, once each, in bounds.
func checkTable(tab *Table) error {
	n := len(tab.slots)
	if n > tab.capacity {
		return fmt.Errorf("%d slots exceed capacity %d", n, tab.capacity)
	}
	live := 0
	for i := range tab.slots {
		if tab.slots[i].gen&1 == 1 {
			live++
		}
	}
	if live != n-tab.free {
		return fmt.Errorf("%d live slots, want %d slots - %d free", live, n, tab.free)
	}
	if tab.free == 0 {
		if tab.head != noSlot || tab.tail != noSlot {
			return fmt.Errorf("empty free queue has head %d tail %d", tab.head, tab.tail)
		}
		return nil
	}
	seen := make(map[uint32]bool, tab.free)
	s := tab.head
	for range tab.free {
		if int(s) >= n || seen[s] || tab.slots[s].gen&1 == 1 {
			return fmt.Errorf("free queue reaches bad slot %d", s)
		}
		seen[s] = true
		if s == tab.tail {
			break
		}
		s = uint32(tab.slots[s].xor)
	}
	if len(seen) != tab.free || s != tab.tail || tab.slots[s].xor != uint64(noSlot) {
		return fmt.Errorf("free queue has %d slots ending at %d, want %d ending at tail %d", len(seen), s, tab.free, tab.tail)
	}
	return nil
}

func newTestTable(t testing.TB, cfg Config) *Table {
	t.Helper()
	tab, err := NewTable(cfg)
	require.NoError(t, err)
	return tab
}

// tuple is a particle in flight in a simulated topology, Storm style: its
// edge value per root it belongs to, and the xor of the edges anchored to
// it since it was received (sent along when it is acked).
type tuple struct {
	ids    map[RootID]uint64
	ackVal uint64
}

// topo simulates spouts and bolts on a table with one clock for both.
type topo struct {
	t     *testing.T
	tab   *Table
	edges *EdgeIDs
	now   int64
}

func newTopo(t *testing.T, cfg Config) *topo {
	return &topo{t: t, tab: newTestTable(t, cfg), edges: seededEdgeIDs(1)}
}

// spout starts a root emitting n tuples.
func (s *topo) spout(n int) (RootID, []*tuple) {
	s.t.Helper()
	var xor uint64
	out := make([]*tuple, n)
	ids := make([]uint64, n)
	for i := range out {
		ids[i] = s.edges.Next()
		xor ^= ids[i]
	}
	root, done, err := s.tab.Init(s.now, xor)
	require.NoError(s.t, err)
	require.Equal(s.t, n == 0, done)
	for i := range out {
		out[i] = &tuple{ids: map[RootID]uint64{root: ids[i]}}
	}
	return root, out
}

// emit returns a new tuple anchored to every anchor, one edge per anchor.
func (s *topo) emit(anchors ...*tuple) *tuple {
	c := &tuple{ids: map[RootID]uint64{}}
	for _, a := range anchors {
		e := s.edges.Next()
		a.ackVal ^= e
		for r := range a.ids {
			c.ids[r] ^= e
		}
	}
	return c
}

// ack acks x and returns the roots it completed.
func (s *topo) ack(x *tuple) []RootID {
	s.t.Helper()
	var done []RootID
	for r, v := range x.ids {
		d, ok := s.tab.Update(s.now, r, v^x.ackVal)
		require.True(s.t, ok, "ack for unknown root %x", r)
		if d {
			done = append(done, r)
		}
	}
	require.NoError(s.t, checkTable(s.tab))
	return done
}
