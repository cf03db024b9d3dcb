package syncbuffer

import (
	"testing"

	"pgregory.net/rapid"
)

// run against a model, a slice: entries leave in the order they came,
// and the blocks held stay within what the entries need and the spares.
func TestRunModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var r run
		var want []entry
		next := int64(0)
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			if len(want) == 0 || rapid.Bool().Draw(t, "push") {
				for range rapid.IntRange(1, 3*runBlockSize).Draw(t, "pushes") {
					next++
					e := entry{time: next}
					if !r.accepts(e) {
						t.Fatalf("run refuses %d after %d entries", next, r.len())
					}
					r.push(e)
					want = append(want, e)
				}
			} else {
				for range rapid.IntRange(1, len(want)).Draw(t, "pops") {
					if got := r.front(); got != want[0] {
						t.Fatalf("front is %v, want %v", got, want[0])
					}
					r.pop()
					want = want[1:]
				}
			}
			if r.len() != len(want) {
				t.Fatalf("len %d, want %d", r.len(), len(want))
			}
			if need := (r.start + r.n + runBlockSize - 1) >> runBlockShift; len(r.blocks)-r.first != need {
				t.Fatalf("%d blocks for %d entries from %d", len(r.blocks)-r.first, r.n, r.start)
			}
			if r.first > len(r.blocks)-r.first || len(r.spare) > keepRunBlocks {
				t.Fatalf("%d drained blocks before %d live, %d spare", r.first, len(r.blocks)-r.first, len(r.spare))
			}
		}
	})
}
