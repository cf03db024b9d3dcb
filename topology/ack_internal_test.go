package topology

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/particle"
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
	var fin finished
	for i := range n {
		batch = append(batch, newTree{tree: tree{msgID: uint64(i), origin: 1, attempt: 1}, xor: uint64(i) | 1})
		if len(batch) == cap(batch) || i == n-1 {
			roots = a.startAll(batch, roots[:0], &fin)
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

// recordingAcker records the trees acked.
type recordingAcker struct{ acked []uint64 }

func (r *recordingAcker) Ack(id uint64)                    { r.acked = append(r.acked, id) }
func (r *recordingAcker) Fail(uint64, acker.Reason, error) {}
func (r *recordingAcker) Redeliver(uint64) (particle.Particle, error) {
	return particle.Particle{}, nil
}

// Updates and failures of one batch apply in the order they were made,
// though they are kept apart: what comes after a tree finished is stale.
// The acks reach the source through its queue.
func TestApplyKeepsOrder(t *testing.T) {
	const edge = 0x5eed
	tests := []struct {
		name    string
		ops     func(o *ackOps, root acker.RootID)
		acked   uint64
		retried int
		stale   uint64
	}{
		{"update completes the tree, the failure after is stale",
			func(o *ackOps, root acker.RootID) { o.update(root, edge); o.fail(root, acker.Failed, nil) }, 1, 0, 1},
		{"failure, the update after is stale",
			func(o *ackOps, root acker.RootID) { o.fail(root, acker.Failed, nil); o.update(root, edge) }, 0, 1, 1},
		{"progress, failure, update",
			func(o *ackOps, root acker.RootID) {
				o.update(root, 0)
				o.fail(root, acker.Failed, nil)
				o.update(root, edge)
			}, 0, 1, 1},
		{"updates only", func(o *ackOps, root acker.RootID) { o.update(root, 1); o.update(root, edge^1) }, 1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingAcker{}
			src := &sourceInstance{origin: 1, ackr: rec, stats: new(ComponentStats), pending: newTokens(4)}
			a, err := newAckService(AckingConfig{MaxAttempts: 3}, []*sourceInstance{src}, nil, 4, func() int64 { return 0 })
			require.NoError(t, err)
			require.NoError(t, src.pending.take(t.Context(), func() error { return nil }))
			roots := a.startAll([]newTree{{tree: tree{msgID: 7, origin: 1, attempt: 1}, xor: edge}}, nil, new(finished))
			var ops ackOps
			tt.ops(&ops, roots[0])
			a.apply(&ops, new(finished))
			var delivered outcomeBatch
			a.outcomes[0].take(&delivered)
			src.deliver(&delivered)
			assert.Equal(t, tt.acked, src.stats.Acked.Load())
			assert.Len(t, rec.acked, int(tt.acked))
			assert.Len(t, src.retries.items, tt.retried)
			assert.Equal(t, tt.stale, a.stale.Load())
			assert.Zero(t, a.table.Len())
		})
	}
}
