package cluster

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every unit has one owner among the workers, each has an even share
// (units/workers, rounded down or up), and the answer does not depend on the order the units and
// workers are listed in: every worker computes the same.
func TestAssignSpreadsEvenly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		units := make([]string, 1+rng.IntN(40))
		for i := range units {
			units[i] = fmt.Sprintf("bolt%d_%d", rng.IntN(5), i)
		}
		workers := make([]string, 1+rng.IntN(6))
		for i := range workers {
			workers[i] = fmt.Sprintf("w%d", rng.IntN(1000)*10+i)
		}
		owners := assign(units, workers)
		require.Len(t, owners, len(units))
		load := map[string]int{}
		for _, u := range units {
			require.Contains(t, workers, owners[u])
			load[owners[u]]++
		}
		lo, hi := len(units)/len(workers), (len(units)+len(workers)-1)/len(workers)
		for _, w := range workers {
			require.GreaterOrEqual(t, load[w], lo, "worker %s", w)
			require.LessOrEqual(t, load[w], hi, "worker %s", w)
		}
		rng.Shuffle(len(units), func(i, j int) { units[i], units[j] = units[j], units[i] })
		rng.Shuffle(len(workers), func(i, j int) { workers[i], workers[j] = workers[j], workers[i] })
		require.Equal(t, owners, assign(units, workers), "the same in any order")
	}
}

// A worker that joins takes units from the others, and gives them back
// when it leaves.
func TestAssignAfterJoinAndLeave(t *testing.T) {
	units := []string{"dedup_0", "dedup_1", "stats10m_0", "stats10m_1", "out_0"}
	alone := assign(units, []string{"w1"})
	for _, u := range units {
		require.Equal(t, "w1", alone[u])
	}
	two := assign(units, []string{"w1", "w2"})
	counts := map[string]int{}
	for _, w := range two {
		counts[w]++
	}
	require.ElementsMatch(t, []int{2, 3}, slices.Collect(maps.Values(counts)))
	require.Equal(t, alone, assign(units, []string{"w1"}))
}

// A worker keeps a unit assigned elsewhere, while it pulls for it, for the
// rebalance delay; it does not start pulling for it; it pulls for a unit
// that ended on any worker.
func TestOwnsKeepsAUnitForTheRebalanceDelay(t *testing.T) {
	w := &Worker{cfg: Config{RebalanceDelay: time.Hour}, self: "w1", live: []string{"w1", "w2"},
		owners: map[string]string{"a": "w1", "b": "w2", "c": "w2"}, lost: map[string]time.Time{}, ended: map[string]bool{"c": true}}
	require.True(t, w.owns("a", false))
	require.False(t, w.owns("b", false), "not pulling: not its own")
	require.True(t, w.owns("b", true), "pulling: kept for the delay")
	w.lost["b"] = time.Now().Add(-2 * time.Hour)
	require.False(t, w.owns("b", true), "handed over after the delay")
	require.True(t, w.owns("c", false), "ended elsewhere: every copy pulls")
}
