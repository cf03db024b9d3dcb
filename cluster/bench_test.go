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
// over a long recording made from the test recording (see benchRepeats):
// in one process (process), on one worker against one NATS node
// (nodes=1/workers=1, replicas 1) and on one and two workers against a
// 3-node cluster with replicas 3 (nodes=3/workers=N). It reports the
// particles per second from the start of the runs to the end of the
// sink; ns/op counts the runs alone, not the start of the workers. Each
// run's output must be the single-process run's. It also reports the CPU
// time of the process per particle (the workers and the NATS servers),
// the bytes the workers published to JetStream per particle (payloads
// confirmed, before replication) and the cores it kept busy: on a machine
// the workers share, a second worker adds no cores, only what its units'
// waits leave idle.
// Each op is one whole run: run it with -benchtime=1x. -count repeats
// each sub-benchmark in a row; for runs that alternate, which a shared
// machine needs for a fair comparison, run the test binary in a loop, in
// the package's directory:
//
//	go test -c -o /tmp/cluster.test ./cluster && cd cluster
//	for i in $(seq 8); do /tmp/cluster.test -test.run '^$' -test.bench Workers -test.benchtime 1x; done
func BenchmarkWorkers(b *testing.B) {
	file, particles := longRecording(b, benchRepeats)
	want := sortedLines(singleProcess(b, file))
	b.Run("process", func(b *testing.B) {
		var elapsed, cpu time.Duration
		for range b.N {
			start, cpu0 := time.Now(), cpuTime(b)
			got := singleProcess(b, file)
			elapsed += time.Since(start)
			cpu += cpuTime(b) - cpu0
			if !slices.Equal(sortedLines(got), want) {
				b.Fatal("the single-process run's output changed")
			}
		}
		reportRun(b, particles, elapsed, cpu, 0)
	})
	for _, nodes := range []int{1, 3} {
		c := natstest.StartCluster(b, nodes)
		for _, n := range []int{1, 2} {
			if nodes == 1 && n > 1 {
				continue
			}
			b.Run(fmt.Sprintf("nodes=%d/workers=%d", nodes, n), func(b *testing.B) {
				benchmarkCluster(b, c, nodes, n, file, particles, want)
			})
		}
	}
}

// benchmarkCluster runs file on n workers of the NATS cluster c of nodes
// nodes, with as many replicas, and reports as BenchmarkWorkers says.
func benchmarkCluster(b *testing.B, c *natstest.Cluster, nodes, n int, file string, particles int, want []string) {
	var (
		elapsed, cpu time.Duration
		jsBytes      uint64
	)
	for i := range b.N {
		b.StopTimer()
		name := fmt.Sprintf("bench-%d-%d-%d-%d", nodes, n, i, time.Now().UnixNano())
		workers := make([]*clusterWorker, n)
		for j := range workers {
			cfg := testConfig(name, fmt.Sprintf("w%d", j+1))
			cfg.Edges.Replicas = nodes
			workers[j] = startWorkerWith(b, c, file, cfg)
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
	reportRun(b, particles, elapsed, cpu, jsBytes)
}

// reportRun reports the figures of b.N runs of particles each that took
// elapsed and cpu and published jsBytes to JetStream (none reported if
// 0: the runs crossed no JetStream, or their bytes were not counted).
func reportRun(b *testing.B, particles int, elapsed, cpu time.Duration, jsBytes uint64) {
	total := float64(particles * b.N)
	b.ReportMetric(total/elapsed.Seconds(), "particles/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/total, "cpu-ns/particle")
	b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "cores")
	if jsBytes > 0 {
		b.ReportMetric(float64(jsBytes)/total, "js-B/particle")
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
