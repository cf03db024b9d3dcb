package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/natstest"
)

// BenchmarkWorkers runs the three-stage pipeline over the test recording,
// unpaced, on one worker and on two, on a 3-node cluster with replicas 3,
// from the workers' start to the sink's end, and reports the particles
// of the recording per second. Run it with -benchtime 1x and -count to
// interleave the two.
func BenchmarkWorkers(b *testing.B) {
	const particles = 7563 // lines of testdata/library1-r1.lp
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			var elapsed time.Duration
			for i := range b.N {
				b.StopTimer()
				c := natstest.StartCluster(b, 3)
				name := fmt.Sprintf("bench-%d-%d-%d", n, i, time.Now().UnixNano())
				var workers []*clusterWorker
				for w := range n {
					workers = append(workers, startWorker(b, c, threeStages, name, fmt.Sprintf("w%d", w+1)))
				}
				require.Eventually(b, func() bool { return len(status(b, workers[0].nc, name).Workers) == n }, 10*time.Second, 20*time.Millisecond)
				b.StartTimer()
				start := time.Now()
				for _, w := range workers {
					w.run()
				}
				require.Eventually(b, func() bool { return ended(workers, "out") == 1 }, 120*time.Second, 5*time.Millisecond)
				elapsed += time.Since(start)
				b.StopTimer()
				for _, w := range workers {
					w.stop()
				}
			}
			b.ReportMetric(float64(particles*b.N)/elapsed.Seconds(), "particles/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
