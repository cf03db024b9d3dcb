package cluster

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The instances of a source spread over the workers: each worker is
// preferred for instances/workers of them, rounded, whatever the source's
// name and the order the workers are listed in.
func TestPreferredWorkerSpreadsInstances(t *testing.T) {
	for _, tc := range []struct{ workers, instances int }{
		{1, 1}, {1, 3}, {2, 2}, {2, 3}, {3, 3}, {3, 7}, {5, 2},
	} {
		for _, source := range []string{"sensors", "feed", "a"} {
			t.Run(fmt.Sprintf("%s/%d-on-%d", source, tc.instances, tc.workers), func(t *testing.T) {
				var workers []string
				for i := range tc.workers {
					// Listed backwards and once twice, as the announcements
					// and the worker's own name may come.
					workers = append(workers, fmt.Sprintf("w%d", tc.workers-i))
				}
				workers = append(workers, workers[0])
				got := map[string]int{}
				for i := range tc.instances {
					got[preferredWorker(workers, source, i)]++
				}
				lo, hi := tc.instances/tc.workers, (tc.instances+tc.workers-1)/tc.workers
				for _, w := range workers {
					require.GreaterOrEqual(t, got[w], lo, "worker %s: %v", w, got)
					require.LessOrEqual(t, got[w], hi, "worker %s: %v", w, got)
				}
			})
		}
	}
}
