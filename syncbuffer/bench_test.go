package syncbuffer

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/sensorstorm/sensorstorm/state"
)

// benchItem is shaped like an engine envelope: a key and a pointer.
type benchItem struct {
	key Key
	//lint:ignore U1000 never read: it gives the item a pointer, as an envelope has
	payload *int
}

func benchKey(it *benchItem) Key { return it.key }

const (
	benchStep   = int64(time.Microsecond) // event time between consecutive pushes
	jitterTable = 1 << 16
)

// benchStream produces items whose event times trail the stream clock by a
// random jitter anywhere in the window, none late. With a window of 2n
// pushes, about n items stay buffered.
type benchStream struct {
	window int64
	jitter []int64
}

func newBenchStream(n int) benchStream {
	window := 2 * int64(n) * benchStep
	r := rand.New(rand.NewPCG(1, 2))
	jitter := make([]int64, jitterTable)
	for i := range jitter {
		jitter[i] = r.Int64N(window)
	}
	return benchStream{window: window, jitter: jitter}
}

// item returns the i-th item and the stream-clock time it arrives at.
func (s benchStream) item(i int) (benchItem, int64) {
	now := int64(i) * benchStep
	return benchItem{key: Key{Time: now - s.jitter[i%jitterTable], Seq: uint64(i)}}, now
}

func BenchmarkSyncBuffer(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run("disorder/buffered="+count(n), func(b *testing.B) { benchBuffer(b, n) })
	}
	b.Run("sortedslice/buffered="+count(100_000), func(b *testing.B) { benchSortedSlice(b, 100_000) })
	b.Run("inorder/window=0", benchInOrder)
}

func count(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// bytesPerItem is the heap a buffer takes per item held, beyond the item
// itself, after n pushes that release nothing.
func bytesPerItem(b *testing.B, n int) float64 {
	before := heapInUse()
	buf := heldBuffer(b, n)
	used := heapInUse() - before
	runtime.KeepAlive(buf)
	return float64(used)/float64(n) - float64(unsafe.Sizeof(benchItem{}))
}

// heldBuffer returns a buffer that holds the first n items of a stream of
// n, released none.
func heldBuffer(b *testing.B, n int) *Buffer[benchItem] {
	s := newBenchStream(n)
	// Without releases the buffer holds everything: with the stream's
	// window none of it is late, and all of it is out of order.
	buf, err := New(Config{Window: time.Duration(s.window)}, 1, benchKey, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		it, now := s.item(i)
		buf.Push(0, it, now)
	}
	if buf.Len() != n {
		b.Fatalf("holds %d of %d", buf.Len(), n)
	}
	return buf
}

func encBench(w *state.Writer, it *benchItem) error {
	w.PutVarint(it.key.Time)
	w.PutUvarint(uint64(it.key.Origin))
	w.PutUvarint(it.key.Seq)
	return nil
}

func decBench(r *state.Reader) (benchItem, error) {
	it := benchItem{key: Key{Time: r.ReadVarint(), Origin: uint32(r.ReadUvarint()), Seq: r.ReadUvarint()}}
	return it, r.Err()
}

// snapshotItems is how many items the snapshot benchmarks' buffer holds.
const snapshotItems = 100_000

func BenchmarkSnapshot(b *testing.B) {
	buf := heldBuffer(b, snapshotItems)
	var w state.Writer
	b.ReportAllocs()
	for b.Loop() {
		w.Reset()
		if err := buf.Snapshot(&w, encBench); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*snapshotItems), "ns/item")
	b.ReportMetric(float64(w.Len())/snapshotItems, "bytes/item")
}

func BenchmarkRestore(b *testing.B) {
	var w state.Writer
	if err := heldBuffer(b, snapshotItems).Snapshot(&w, encBench); err != nil {
		b.Fatal(err)
	}
	cfg := Config{Window: time.Duration(newBenchStream(snapshotItems).window)}
	b.ReportAllocs()
	for b.Loop() {
		buf, err := New(cfg, 1, benchKey, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := buf.Restore(state.NewReader(w.Bytes()), decBench); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*snapshotItems), "ns/item")
}

func benchBuffer(b *testing.B, n int) {
	s := newBenchStream(n)
	buf, err := New(Config{Window: time.Duration(s.window)}, 1, benchKey, nil)
	if err != nil {
		b.Fatal(err)
	}
	released := 0
	release := func(benchItem) bool { released++; return true }
	// One window of pushes reaches the steady state.
	fill := 2 * n
	for i := range fill {
		it, now := s.item(i)
		buf.Push(0, it, now)
		buf.Release(now, release)
	}
	held := buf.Len()

	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		it, now := s.item(fill + i)
		if st := buf.Push(0, it, now); st != Buffered {
			b.Fatalf("push %d: %v", i, st)
		}
		buf.Release(now, release)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pushes/s")
	if n >= 1_000_000 {
		// Smaller buffers drown in the heap's noise.
		b.ReportMetric(bytesPerItem(b, n), "B/particle")
	}
	b.ReportMetric(float64(held+buf.Len())/2, "buffered")
	buf.EndOfStream(0)
	buf.Release(0, release)
	if released != fill+b.N {
		b.Fatalf("released %d of %d", released, fill+b.N)
	}
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// sortedSlice is the baseline: a slice kept sorted by binary-search insert,
// released from the front.
type sortedSlice struct {
	items []benchItem
	head  int
}

func (s *sortedSlice) push(it benchItem) {
	live := s.items[s.head:]
	i := s.head + sort.Search(len(live), func(j int) bool { return it.key.Less(live[j].key) })
	s.items = append(s.items, benchItem{})
	copy(s.items[i+1:], s.items[i:])
	s.items[i] = it
}

func (s *sortedSlice) release(watermark int64, fn func(benchItem)) {
	for s.head < len(s.items) && s.items[s.head].key.Time <= watermark {
		fn(s.items[s.head])
		s.items[s.head] = benchItem{}
		s.head++
	}
	if s.head > len(s.items)/2 {
		s.items = s.items[:copy(s.items, s.items[s.head:])]
		s.head = 0
	}
}

func benchSortedSlice(b *testing.B, n int) {
	s := newBenchStream(n)
	var buf sortedSlice
	var high int64
	released := 0
	release := func(benchItem) { released++ }
	fill := 2 * n
	for i := range fill {
		it, _ := s.item(i)
		high = max(high, it.key.Time)
		buf.push(it)
		buf.release(high-s.window, release)
	}

	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		it, _ := s.item(fill + i)
		high = max(high, it.key.Time)
		buf.push(it)
		buf.release(high-s.window, release)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pushes/s")
	buf.release(high, release)
	if released != fill+b.N {
		b.Fatalf("released %d of %d", released, fill+b.N)
	}
}

// benchInOrder measures the path of an in-order stream with no window,
// which bypasses the tree.
func benchInOrder(b *testing.B) {
	buf, err := New(Config{}, 1, benchKey, nil)
	if err != nil {
		b.Fatal(err)
	}
	released := 0
	release := func(benchItem) bool { released++; return true }
	b.ReportAllocs()
	for i := range b.N {
		now := int64(i) * benchStep
		buf.Push(0, benchItem{key: Key{Time: now, Seq: uint64(i)}}, now)
		buf.Release(now, release)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pushes/s")
	// The newest item waits for a later one or the end of the stream.
	buf.EndOfStream(0)
	buf.Release(math.MaxInt64, release)
	if released != b.N {
		b.Fatalf("released %d of %d", released, b.N)
	}
}
