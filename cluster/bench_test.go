package cluster_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/internal/cputime"
	"github.com/sensorstorm/sensorstorm/natstest"
)

// benchRepeats is how many times BenchmarkWorkers replays the test
// recording (7563 lines, 6.75 hours) back to back, each copy an hour
// after the last one's span: 302,520 lines, long enough that a run's
// figure is the pipeline's steady throughput more than the workers'
// start-up.
const benchRepeats = 40

// BenchmarkWorkers runs the three-stage pipeline (pipelines/library1-mean.yaml)
// over a long recording made from the test recording (see benchRepeats)
// on one worker and on two, on a 3-node cluster with replicas 3, and
// reports the particles per second from the start of the runs to the end
// of the sink; ns/op counts the runs alone, not the start of the workers.
// Each run's output must be the single-process run's. It also reports the
// CPU time of the process per particle (the workers and the three NATS
// servers), the bytes the workers published to JetStream per particle
// (payloads confirmed, before replication) and the cores it kept busy:
// on a machine the workers share, a
// second worker adds no cores, only what its units' waits leave idle.
// Each op is one whole run: run it with -benchtime=1x. -count repeats
// each sub-benchmark in a row; for runs of workers=1 and workers=2 that
// alternate, which a shared machine needs for a fair comparison, run the
// test binary in a loop, in the package's directory:
//
//	go test -c -o /tmp/cluster.test ./cluster && cd cluster
//	for i in $(seq 8); do /tmp/cluster.test -test.run '^$' -test.bench Workers -test.benchtime 1x; done
func BenchmarkWorkers(b *testing.B) {
	file, particles := longRecording(b, benchRepeats)
	want := sortedLines(singleProcess(b, file))
	c := natstest.StartCluster(b, 3)
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			var (
				elapsed, cpu time.Duration
				jsBytes      uint64
			)
			for i := range b.N {
				b.StopTimer()
				name := fmt.Sprintf("bench-%d-%d-%d", n, i, time.Now().UnixNano())
				workers := make([]*clusterWorker, n)
				for j := range workers {
					workers[j] = startWorker(b, c, file, name, fmt.Sprintf("w%d", j+1))
				}
				// Every worker sees all, so that none pulls for a unit it
				// hands over once the run started.
				deadline := time.Now().Add(10 * time.Second)
				for slices.ContainsFunc(workers, func(w *clusterWorker) bool { return len(w.w.Workers()) < n }) {
					if time.Now().After(deadline) {
						b.Fatalf("%d workers did not see each other", n)
					}
					time.Sleep(20 * time.Millisecond)
				}
				b.StartTimer()
				start, cpu0 := time.Now(), cpuTime(b)
				for _, w := range workers {
					w.run()
				}
				deadline = time.Now().Add(10 * time.Minute)
				for ended(workers, "out") == 0 {
					if time.Now().After(deadline) {
						b.Fatal("the sink did not end")
					}
					time.Sleep(5 * time.Millisecond)
				}
				elapsed += time.Since(start)
				cpu += cpuTime(b) - cpu0
				b.StopTimer()
				var out strings.Builder
				for _, w := range workers {
					w.stop()
					if w.err != nil {
						b.Fatalf("worker %s: %v", w.name, w.err)
					}
					out.WriteString(w.out.String())
					jsBytes += w.w.Transport().Stats().PublishedBytes.Load()
				}
				if got := sortedLines(out.String()); !slices.Equal(got, want) {
					b.Fatalf("%d lines of output, not the %d of the single-process run", len(got), len(want))
				}
			}
			b.ReportMetric(float64(particles*b.N)/elapsed.Seconds(), "particles/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(particles*b.N), "cpu-ns/particle")
			b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "cores")
			b.ReportMetric(float64(jsBytes)/float64(particles*b.N), "js-B/particle")
		})
	}
}

// longRecording writes the test recording repeated times into a
// temporary directory, each copy shifted an hour past the previous one's
// end, with the pipeline of pipelines/library1-mean.yaml reading it, and
// returns the pipeline's file and the recording's lines.
func longRecording(b *testing.B, repeats int) (pipelineFile string, lines int) {
	b.Helper()
	recording, err := os.ReadFile("../testdata/library1-r1.lp")
	if err != nil {
		b.Fatal(err)
	}
	var first, last int64
	var times []int64
	var rest [][]byte // each line without its timestamp
	for line := range bytes.Lines(recording) {
		line = bytes.TrimRight(line, "\n")
		i := bytes.LastIndexByte(line, ' ')
		ts, err := strconv.ParseInt(string(line[i+1:]), 10, 64)
		if err != nil {
			b.Fatalf("recording line %q: %v", line, err)
		}
		if len(times) == 0 || ts < first {
			first = ts
		}
		last = max(last, ts)
		times, rest = append(times, ts), append(rest, line[:i+1])
	}
	shift := last - first + int64(time.Hour)
	dir := b.TempDir()
	data := filepath.Join(dir, "long.lp")
	f, err := os.Create(data)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for k := range int64(repeats) {
		for i, r := range rest {
			w.Write(r)
			w.WriteString(strconv.FormatInt(times[i]+k*shift, 10))
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	spec, err := os.ReadFile(threeStages)
	if err != nil {
		b.Fatal(err)
	}
	const shipped = "../testdata/library1-r1.lp"
	if !bytes.Contains(spec, []byte(shipped)) {
		b.Fatalf("%s does not read %s", threeStages, shipped)
	}
	pipelineFile = filepath.Join(dir, "long.yaml")
	if err := os.WriteFile(pipelineFile, bytes.ReplaceAll(spec, []byte(shipped), []byte(data)), 0o600); err != nil {
		b.Fatal(err)
	}
	return pipelineFile, len(rest) * repeats
}

// cpuTime returns the CPU time the process used so far.
func cpuTime(tb testing.TB) time.Duration {
	d, err := cputime.Process()
	if err != nil {
		tb.Fatal(err)
	}
	return d
}
