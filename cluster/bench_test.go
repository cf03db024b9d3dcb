package cluster_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/natstest"
)

// BenchmarkWorkers runs the three-stage pipeline over the test recording
// on one worker and on two, on a 3-node cluster with replicas 3, and
// reports the particles per second from the start of the runs to the end
// of the sink; ns/op counts the runs alone, not the start of the workers.
// The recording is short: a run's figure is mostly the workers'
// start-up, the units' first leases and pinning, rather than the
// pipeline's steady throughput. On a shared machine, alternate runs of
// workers=1 and workers=2.
func BenchmarkWorkers(b *testing.B) {
	recording, err := os.ReadFile("../testdata/library1-r1.lp")
	if err != nil {
		b.Fatal(err)
	}
	particles := bytes.Count(recording, []byte("\n"))
	c := natstest.StartCluster(b, 3)
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			var elapsed time.Duration
			for i := range b.N {
				b.StopTimer()
				name := fmt.Sprintf("bench-%d-%d-%d", n, i, time.Now().UnixNano())
				workers := make([]*clusterWorker, n)
				for j := range workers {
					workers[j] = startWorker(b, c, threeStages, name, fmt.Sprintf("w%d", j+1))
				}
				deadline := time.Now().Add(10 * time.Second)
				for len(status(b, workers[0].nc, name).Workers) < n {
					if time.Now().After(deadline) {
						b.Fatalf("%d workers did not announce themselves", n)
					}
					time.Sleep(20 * time.Millisecond)
				}
				b.StartTimer()
				start := time.Now()
				for _, w := range workers {
					w.run()
				}
				deadline = time.Now().Add(90 * time.Second)
				for ended(workers, "out") == 0 {
					if time.Now().After(deadline) {
						b.Fatal("the sink did not end")
					}
					time.Sleep(5 * time.Millisecond)
				}
				elapsed += time.Since(start)
				for _, w := range workers {
					w.stop()
					if w.err != nil {
						b.Fatalf("worker %s: %v", w.name, w.err)
					}
				}
			}
			b.ReportMetric(float64(particles*b.N)/elapsed.Seconds(), "particles/s")
		})
	}
}
