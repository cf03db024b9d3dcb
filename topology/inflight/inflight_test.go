package inflight_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/topology/inflight"
)

// TestTable checks Table against a map from message ids' numbers to
// inputs: numbers are never 0, never given twice while in use, and name
// their input until removed.
func TestTable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var f inflight.Table[int]
		model := map[uint32]int{}
		for i := range rapid.IntRange(0, 200).Draw(t, "ops") {
			if len(model) > 0 && rapid.Bool().Draw(t, "remove") {
				var n uint32
				for k := range model {
					n = k
					break
				}
				f.Remove(n)
				delete(model, n)
				_, ok := f.Get(inflight.ID(n, 0))
				assert.False(t, ok)
				continue
			}
			n := f.Add(i)
			_, taken := model[n]
			if n == 0 || taken {
				t.Fatalf("number %d given while in use", n)
			}
			model[n] = i
			k := rapid.Uint32().Draw(t, "k")
			got, ok := f.Get(inflight.ID(n, k))
			assert.True(t, ok)
			assert.Equal(t, i, got)
			assert.Equal(t, k, inflight.Place(inflight.ID(n, k)))
		}
		assert.Equal(t, len(model), f.Len())
	})
}
