package syncbuffer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSlotsNeverMoveAnItem(t *testing.T) {
	b := newTestBuffer(t, Config{Window: time.Hour}, 1)
	const n = 10 * pageSize
	b.Push(0, data(0, 0, 0), 0)
	first := b.slot(0)
	for i := 1; i < n; i++ {
		b.Push(0, data(int64(n-i), 0, uint64(i)), 0)
	}
	assert.Same(t, first, b.slot(0), "the first item stays where it was stored")
	assert.Len(t, b.slots, n/pageSize)
	b.EndOfStream(0)
	got := drain(b, 0)
	assert.Len(t, got, n)
	assert.IsIncreasing(t, got)
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
