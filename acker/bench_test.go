package acker

import (
	"runtime"
	"testing"
)

// steadyTable returns a table with pending trees whose values are vals.
func steadyTable(b *testing.B, capacity, pending int) (*Table, []RootID, []uint64) {
	b.Helper()
	tab, err := NewTable(Config{Capacity: capacity})
	if err != nil {
		b.Fatal(err)
	}
	edges := seededEdgeIDs(1)
	ids := make([]RootID, pending)
	vals := make([]uint64, pending)
	for i := range ids {
		vals[i] = edges.Next()
		if ids[i], _, err = tab.Init(0, vals[i]); err != nil {
			b.Fatal(err)
		}
	}
	return tab, ids, vals
}

func BenchmarkAcker(b *testing.B) {
	const pending = 1 << 16
	b.Run("steady=64k", func(b *testing.B) {
		// Finish the oldest tree and start a new one: one Update, one Init.
		tab, ids, vals := steadyTable(b, 2*pending, pending)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if done, ok := tab.Update(1, ids[i], vals[i]); !done || !ok {
				b.Fatal("tree not done")
			}
			ids[i], _, _ = tab.Init(1, vals[i])
			if i++; i == pending {
				i = 0
			}
		}
		b.ReportMetric(2*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
	b.Run("tree=64k", func(b *testing.B) {
		// Storm style with fresh edge ids: a root with two edges, one acked
		// with a grandchild anchored, then the other two acked.
		tab, ids, vals := steadyTable(b, 2*pending, pending)
		edges := seededEdgeIDs(2)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			tab.Update(1, ids[i], vals[i]) // finish the oldest
			e1, e2, e3 := edges.Next(), edges.Next(), edges.Next()
			id, _, _ := tab.Init(1, e1^e2)
			tab.Update(2, id, e1^e3)
			tab.Update(3, id, e2)
			vals[i] = e3
			ids[i] = id
			if i++; i == pending {
				i = 0
			}
		}
		b.ReportMetric(4*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
	b.Run("pending=1M", func(b *testing.B) {
		const n = 1 << 20
		var perTree float64
		for b.Loop() {
			perTree = heapPerPending(b, n)
		}
		b.ReportMetric(perTree, "B/pending")
	})
}

// heapPerPending builds a table of n pending trees (grown from empty) and
// returns the heap it holds per tree.
func heapPerPending(b *testing.B, n int) float64 {
	var before, after runtime.MemStats
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.StartTimer()
	tab, err := NewTable(Config{Capacity: n})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if _, _, err := tab.Init(0, uint64(i)|1); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(tab)
	b.StartTimer()
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

func BenchmarkExpire(b *testing.B) {
	for _, bm := range []struct {
		name    string
		pending int
	}{{"pending=64k", 1 << 16}, {"pending=1M", 1 << 20}} {
		b.Run(bm.name, func(b *testing.B) {
			tab, _, _ := steadyTable(b, bm.pending, bm.pending)
			b.ReportAllocs()
			for b.Loop() {
				tab.Expire(1, 1, func(RootID, Reason) { b.Fatal("tree failed") })
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bm.pending), "ns/tree")
		})
	}
}

func BenchmarkEdgeIDs(b *testing.B) {
	g := NewEdgeIDs()
	var sink uint64
	for b.Loop() {
		sink ^= g.Next()
	}
	runtime.KeepAlive(sink)
}
