//go:build !race

package syncbuffer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSteadyStateDoesNotAllocate(t *testing.T) {
	s := newBenchStream(1000)
	b, err := New(Config{Window: time.Duration(s.window)}, 1, benchKey, nil)
	assert.NoError(t, err)
	release := func(benchItem) bool { return true }
	i := 0
	step := func() {
		it, now := s.item(i)
		b.Push(0, it, now)
		b.Release(now, release)
		i++
	}
	for range 10_000 {
		step()
	}
	assert.Zero(t, testing.AllocsPerRun(10_000, step))
}
