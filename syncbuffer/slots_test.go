package syncbuffer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestSlotsNeverMoveAnItem(t *testing.T) {
	// More inputs than keep runs, and items further apart than the
	// buckets span, so that all but the first go to slots and the tree.
	const inputs = maxRunInputs + 1
	b := newTestBuffer(t, Config{Window: time.Hour, FutureBound: -1}, inputs)
	const n = 10 * pageSize
	const apart = 4 * int64(time.Hour)
	var first *item
	for i := range n + 1 {
		b.Push(i%inputs, data(int64(i)*apart, 0, uint64(i)), 0)
		if i == 1 {
			first = b.slot(0)
		}
	}
	assert.Same(t, first, b.slot(0), "the first item stays where it was stored")
	assert.Equal(t, n/pageSize, b.slots.len())
	assert.Equal(t, 1, b.buckets.len())
	for i := range inputs {
		b.EndOfStream(i)
	}
	got := drain(b, 0)
	assert.Len(t, got, n+1)
	assert.IsIncreasing(t, got)
}

// A burst's pages are given back once its items are released, while the
// buffer goes on holding a steady stream and never empties.
func TestSlotsGivenBackAfterABurst(t *testing.T) {
	const window = 1000
	b := newTestBuffer(t, Config{Window: window}, 1)
	tm := int64(0)
	push := func(n int) {
		for range n {
			tm++
			require.Equal(t, Buffered, b.Push(0, data(tm, 0, uint64(tm)), 0))
		}
		drain(b, 0)
	}
	push(64 * pageSize)
	assert.Equal(t, 64, b.slots.len(), "the burst's pages")
	for range 10 {
		push(window)
		require.NotZero(t, b.Len(), "the buffer never empties")
	}
	assert.LessOrEqual(t, b.slots.len(), 2*keepPages, "the burst's pages were given back")
}

func TestSizeMeasuredOncePerItem(t *testing.T) {
	b := newTestBuffer(t, Config{Window: 100}, 1)
	calls := 0
	b.MeasureWith(func(it *item) int { calls++; return int(it.K.Seq) })
	for i := range 3 {
		b.Push(0, data(int64(i), 0, uint64(i+1)), 0)
	}
	assert.Equal(t, int64(1+2+3), b.Bytes())
	b.EndOfStream(0)
	assert.Len(t, drain(b, 0), 3)
	assert.Zero(t, b.Bytes())
	assert.Equal(t, 3, calls, "measured when stored, not again when released")
}

// slotPages against a model, the used slots: alloc takes the lowest free
// slot, and the pages held stay within a factor of those in use.
func TestSlotPagesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s slotPages[int]
		var used []bool // by slot
		count := 0
		hint := 0 // no slot below it is free
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			if count == 0 || rapid.Bool().Draw(t, "alloc") {
				for range rapid.IntRange(1, 2*pageSize).Draw(t, "allocs") {
					want := hint
					for want < len(used) && used[want] {
						want++
					}
					if want == len(used) {
						used = append(used, false)
					}
					hint = want + 1
					if got := s.alloc(); got != uint32(want) {
						t.Fatalf("alloc took slot %d, not the lowest free one, %d", got, want)
					}
					*s.at(uint32(want)) = want + 1
					used[want] = true
					count++
				}
				continue
			}
			// Release a run of the used slots, as a buffer releases a
			// range of keys.
			from := rapid.IntRange(0, len(used)-1).Draw(t, "from")
			to := rapid.IntRange(from, len(used)-1).Draw(t, "to")
			hint = min(hint, from)
			for i := from; i <= to; i++ {
				if !used[i] {
					continue
				}
				if got := *s.at(uint32(i)); got != i+1 {
					t.Fatalf("slot %d holds %d: an item moved", i, got)
				}
				*s.at(uint32(i)) = 0
				s.release(uint32(i))
				used[i] = false
				count--
			}
			top := -1
			for i := len(used) - 1; i >= 0; i-- {
				if used[i] {
					top = i >> pageShift
					break
				}
			}
			require.Equal(t, top+1, s.inUse)
			require.LessOrEqual(t, s.len(), max(4*s.inUse, 2*keepPages))
		}
	})
}
