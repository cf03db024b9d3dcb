package topology

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Takers at the limit are woken by every token given back: none is lost
// and the limit always holds.
func TestTokens(t *testing.T) {
	const limit, n = 4, 20000
	tk := newTokens(limit)
	held := make(chan struct{}, n)
	var inUse, peak atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for range n {
			<-held
			inUse.Add(-1)
			tk.give(1)
		}
	})
	for range 2 {
		wg.Go(func() {
			for range n / 2 {
				require.NoError(t, tk.take(context.Background(), func() error { return nil }))
				if u := inUse.Add(1); u > peak.Load() {
					peak.Store(u)
				}
				held <- struct{}{}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, tk.outstanding())
	assert.LessOrEqual(t, peak.Load(), int64(limit))
}

func TestTokensTakeEndsWithContext(t *testing.T) {
	tk := newTokens(1)
	require.NoError(t, tk.take(context.Background(), func() error { return nil }))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var blocked bool
	err := tk.take(ctx, func() error { blocked = true; return nil })
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, blocked, "the caller is told before the wait")
}

// tryTakeUpTo takes what is free, never more than the limit, and leaves
// the rest to a waiting taker.
func TestTokensTryTakeUpTo(t *testing.T) {
	tests := []struct {
		name         string
		limit, taken int
		n, want      int
	}{
		{"all free", 10, 0, 4, 4},
		{"some free", 10, 8, 4, 2},
		{"exactly free", 10, 6, 4, 4},
		{"none free", 10, 10, 4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := newTokens(tt.limit)
			for range tt.taken {
				require.True(t, tk.tryTake())
			}
			assert.Equal(t, tt.want, tk.tryTakeUpTo(tt.n))
			assert.Equal(t, tt.taken+tt.want, tk.outstanding())
		})
	}
}
