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
