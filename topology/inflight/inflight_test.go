package inflight_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/topology/inflight"
)

// TestTable checks Table against a map from message ids' numbers to
// inputs: numbers are never 0, never given twice while in use, and name
// their input until removed, whether added, found and removed one at a
// time or in batches.
func TestTable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var f inflight.Table[int]
		model := map[uint32]int{}
		next := 0
		for range rapid.IntRange(0, 200).Draw(t, "ops") {
			if len(model) > 0 && rapid.Bool().Draw(t, "remove") {
				var gone []uint32
				for k := range model {
					gone = append(gone, k)
					if len(gone) == rapid.IntRange(1, 4).Draw(t, "removed") {
						break
					}
				}
				if len(gone) == 1 && rapid.Bool().Draw(t, "one") {
					f.Remove(gone[0])
				} else {
					f.RemoveAll(gone)
				}
				for _, n := range gone {
					delete(model, n)
					_, ok := f.Get(inflight.ID(n, 0))
					assert.False(t, ok)
				}
				continue
			}
			vs := make([]int, rapid.IntRange(1, 4).Draw(t, "added"))
			for i := range vs {
				vs[i] = next
				next++
			}
			var numbers []uint32
			if len(vs) == 1 && rapid.Bool().Draw(t, "one") {
				numbers = append(numbers, f.Add(vs[0]))
			} else {
				numbers = f.AddAll(nil, vs)
			}
			ids := make([]uint64, len(numbers))
			for i, n := range numbers {
				_, taken := model[n]
				if n == 0 || taken {
					t.Fatalf("number %d given while in use", n)
				}
				model[n] = vs[i]
				k := rapid.Uint32().Draw(t, "k")
				ids[i] = inflight.ID(n, k)
				got, ok := f.Get(ids[i])
				assert.True(t, ok)
				assert.Equal(t, vs[i], got)
				assert.Equal(t, k, inflight.Place(ids[i]))
			}
			// An id whose number names nothing is left out.
			assert.Equal(t, vs, f.GetAll(nil, append(ids, inflight.ID(1<<31, 0))))
		}
		assert.Equal(t, len(model), f.Len())
	})
}
