package topology

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/acker"
)

// newPendingService returns an ack service with one source and n trees
// pending, started in batches as sources start them.
func newPendingService(tb testing.TB, capacity, n int) *ackService {
	tb.Helper()
	src := &sourceInstance{origin: 1, stats: new(ComponentStats), pending: newTokens(capacity)}
	a, err := newAckService(AckingConfig{}, []*sourceInstance{src}, nil, capacity, func() int64 { return 0 })
	require.NoError(tb, err)
	batch := make([]newTree, 0, 1024)
	var roots []acker.RootID
	var results []outcome
	for i := range n {
		batch = append(batch, newTree{tree: tree{msgID: uint64(i), origin: 1, attempt: 1}, xor: uint64(i) | 1})
		if len(batch) == cap(batch) || i == n-1 {
			roots, results = a.startAll(batch, roots[:0], results)
			batch = batch[:0]
		}
	}
	return a
}

// The engine keeps 16 bytes per pending tree besides the acker's slot, in
// pages added as trees become pending, whatever the capacity.
func TestSideTableGrowsWithPending(t *testing.T) {
	assert.Equal(t, uintptr(16), unsafe.Sizeof(tree{}))
	a := newPendingService(t, 1<<20, 10)
	assert.Len(t, a.trees, 1, "one page for ten trees, not a table for the capacity")
	assert.Equal(t, 10, a.table.Len())
}

// BenchmarkAckService reports the heap the engine holds per pending tree:
// the acker's slot and the side entry, at a million trees pending.
func BenchmarkAckService(b *testing.B) {
	b.Run("pending=1M", func(b *testing.B) {
		const n = 1 << 20
		var perTree float64
		for b.Loop() {
			b.StopTimer()
			before := heapAlloc()
			b.StartTimer()
			a := newPendingService(b, n, n)
			b.StopTimer()
			perTree = float64(heapAlloc()-before) / n
			runtime.KeepAlive(a)
			b.StartTimer()
		}
		b.ReportMetric(perTree, "B/pending")
	})
}

func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
