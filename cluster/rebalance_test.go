package cluster_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A worker that joins a running pipeline gets its share of the units: the
// first worker, pinned for every unit, hands over those assigned to the
// newcomer, and the output is still the single-process output. The units
// handed over rebuild their windows from the messages given back, those
// of the instances chained to them too, and both workers end the run on
// their own.
func TestJoiningWorkerTakesItsShare(t *testing.T) {
	want := singleProcess(t, threeStages)
	c := natstestCluster(t)
	name := fmt.Sprintf("join-%d", time.Now().UnixNano())
	// File sinks: standard output writes again what came after a
	// checkpoint its unit restored where it moved.
	dir := t.TempDir()
	paced := pacedToFiles(t, dir)
	first := startWorker(t, c, paced, name, "w1")
	first.run()
	// The units of the three stages: dedup's two instances, each the head
	// of a chain with the instance of stats10m of its index, and out's one.
	const n = 3
	var units []string
	require.Eventually(t, func() bool {
		units = first.w.Transport().Units()
		return len(units) == n && len(first.w.Transport().ActiveUnits(time.Time{})) == n
	}, 30*time.Second, 20*time.Millisecond, "the first worker alone runs every unit")
	require.ElementsMatch(t, []string{"dedup_0", "dedup_1", "out_0"}, units, "a chained instance moves with its head")
	joined := time.Now()
	second := startWorker(t, c, paced, name, "w2")
	second.run()
	workers := []*clusterWorker{first, second}
	require.Eventually(t, func() bool {
		ran := second.w.Transport().ActiveUnits(joined)
		return slices.ContainsFunc(second.w.Assigned(), func(u string) bool { return slices.Contains(ran, u) })
	}, 30*time.Second, 20*time.Millisecond, "the second worker runs units assigned to it")
	t.Logf("the second worker ran units %v %s after it joined", second.w.Transport().ActiveUnits(joined), time.Since(joined).Round(time.Millisecond))
	var a, b []string
	require.Eventually(t, func() bool {
		a, b = first.w.Assigned(), second.w.Assigned()
		return len(a)+len(b) == n
	}, 10*time.Second, 20*time.Millisecond, "both workers see both")
	require.ElementsMatch(t, units, append(slices.Clone(a), b...), "every unit assigned to one worker")
	most := (n+1)/2 + 1
	for _, assigned := range [][]string{a, b} {
		require.NotEmpty(t, assigned)
		require.LessOrEqual(t, len(assigned), most)
	}
	// Every copy of a unit ended somewhere takes the end of stream sent
	// again, and ends: both workers finish the run.
	for _, w := range workers {
		select {
		case <-w.ran:
		case <-time.After(90 * time.Second):
			for _, w := range workers {
				t.Logf("worker %s: ran %v since the join, transport %+v", w.name, w.w.Transport().ActiveUnits(joined), counts(w.w.Transport().Stats()))
			}
			t.Fatalf("worker %s did not finish the run", w.name)
		}
	}

	for _, w := range workers {
		w.stop()
		require.NoError(t, w.err, "worker %s", w.name)
		t.Logf("worker %s: ran %v since the join, transport %+v", w.name, w.w.Transport().ActiveUnits(joined), counts(w.w.Transport().Stats()))
	}
	requireSameLines(t, lines(want), workerFiles(t, dir))
}
