package syncbuffer

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// drainSorted ends every input, releases everything and requires the keys
// to come out in order.
func drainSorted(t *testing.T, b *Buffer[item], inputs int) []Key {
	t.Helper()
	for i := range inputs {
		b.EndOfStream(i)
	}
	got := drainKeys(b, 0)
	require.True(t, slices.IsSortedFunc(got, func(a, b Key) int {
		if a.Less(b) {
			return -1
		}
		if b.Less(a) {
			return 1
		}
		return 0
	}), "released in key order")
	require.Zero(t, b.Len())
	return got
}

// A bucket takes at most maxBucket items; the tree takes the others of
// its span, and the order holds across both.
func TestFullBucketOverflowsToTree(t *testing.T) {
	const width = 100
	b := newTestBuffer(t, Config{Window: width * bucketsPerWindow}, 2)
	r := rand.New(rand.NewPCG(1, 2))
	const n = maxBucket + 1000
	for i := range n {
		// Two inputs, so that an item out of order for one is in order
		// for none: all but the runs' few go to buckets.
		require.Equal(t, Buffered, b.Push(i%2, data(r.Int64N(width), uint32(i%2), uint64(i)), 0))
	}
	assert.Equal(t, maxBucket, b.buckets.len(), "the bucket is full")
	assert.NotZero(t, b.tree.Len(), "the rest went to the tree")
	assert.Len(t, drainSorted(t, b, 2), n)
}

// A window so wide that a bucket's offsets do not fit an order value is
// sorted by comparing entries.
func TestHugeWindowBuckets(t *testing.T) {
	b := newTestBuffer(t, Config{Window: math.MaxInt64, FutureBound: -1}, 1)
	r := rand.New(rand.NewPCG(3, 4))
	want := make([]Key, 0, 512)
	for i := range 512 {
		k := Key{Time: r.Int64N(1 << 62), Seq: uint64(i % 7)}
		want = append(want, k)
		require.Equal(t, Buffered, b.Push(0, item{K: k}, 0))
	}
	assert.NotZero(t, b.buckets.len())
	slices.SortFunc(want, func(a, b Key) int {
		if a.Less(b) {
			return -1
		}
		return 1
	})
	assert.Equal(t, want, drainSorted(t, b, 1))
}

// A burst's chunks are given back once it is released, while the buffer
// goes on holding a steady stream out of order.
func TestBucketsGivenBackAfterABurst(t *testing.T) {
	const window = 16_000
	b := newTestBuffer(t, Config{Window: window, IdleTimeout: -1, FutureBound: -1}, 1)
	r := rand.New(rand.NewPCG(5, 6))
	high := int64(0)
	// push pushes n items per unit of event time for span units, each up
	// to half a window late, and releases.
	push := func(span int64, n int) {
		for range span {
			high++
			for range n {
				require.Equal(t, Buffered, b.Push(0, data(high-r.Int64N(window/2), 0, 0), 0))
			}
			b.Release(0, func(item) bool { return true })
		}
	}
	push(window, 1)
	steady := b.Len()
	push(window/8, 64)
	burst := b.Len()
	require.Greater(t, burst, 4*steady, "the burst is held")
	push(4*window, 1)
	require.NotZero(t, b.Len(), "the buffer never empties")
	spare := len(b.buckets.spareChunks) * chunkSize
	assert.LessOrEqual(t, spare, max(b.Len(), keepSlots), "spare chunks beyond what is held were given back")
	assert.LessOrEqual(t, b.buckets.spareCap, max(b.Len(), keepSlots), "spare entries beyond what is held were given back")
	assert.Less(t, spare, burst/4)
}

// What sorting a big bucket took is given back once the buckets sorted
// are small again.
func TestBucketScratchGivenBack(t *testing.T) {
	const width = 100
	b := newTestBuffer(t, Config{Window: width * bucketsPerWindow, IdleTimeout: -1}, 2)
	r := rand.New(rand.NewPCG(9, 10))
	scratch := func() []int {
		return []int{cap(b.buckets.entries), cap(b.buckets.order), cap(b.buckets.scratch)}
	}
	// push pushes n items from two inputs, so that nearly all go to
	// buckets, each in the span of bucket number at, and releases them.
	push := func(at int64, n int) {
		for i := range n {
			require.Equal(t, Buffered, b.Push(i%2, data(at*width+r.Int64N(width), uint32(i%2), uint64(i)), 0))
		}
		for i := range 2 {
			b.Advance(i, math.MinInt64, (at+1)*width, 0)
		}
		drainKeys(b, 0)
		require.Zero(t, b.Len())
	}
	push(bucketsPerWindow, 8*keepSlots)
	for _, c := range scratch() {
		require.Greater(t, c, 2*keepSlots, "the big bucket's scratch")
	}
	push(bucketsPerWindow+1, 100)
	for _, c := range scratch() {
		assert.LessOrEqual(t, c, 2*keepSlots, "given back")
	}
}

func TestSpreadSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{spreadMin, 100, 1000, 10_000} {
		for _, width := range []int{0, 1, 5, 11, 12, 25, 47} {
			keys := make([]uint64, n)
			for i := range keys {
				keys[i] = r.Uint64N(1<<width)<<placeBits | uint64(i)
			}
			want := slices.Clone(keys)
			slices.Sort(want)
			got, _ := spreadSort(keys, nil, width)
			assert.Equal(t, want, got, "%d keys below 1<<%d", n, width)
		}
	}
}

func TestFloorDiv(t *testing.T) {
	for _, tt := range []struct{ a, d, want int64 }{
		{7, 2, 3}, {-7, 2, -4}, {-8, 2, -4}, {0, 5, 0}, {math.MinInt64, 3, math.MinInt64/3 - 1}, {math.MaxInt64, 1, math.MaxInt64},
	} {
		assert.Equal(t, tt.want, floorDiv(tt.a, tt.d), "%d/%d", tt.a, tt.d)
	}
}
