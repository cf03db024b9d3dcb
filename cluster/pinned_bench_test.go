package cluster_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/natstest"
)

// BenchmarkPinnedWorkers runs the pipeline of BenchmarkWorkers as worker
// processes, each pinned to a core of its own with taskset: one worker on
// core 0, then two on cores 0 and 1, against one NATS node (replicas 1)
// in the benchmark's process, which no taskset pins: on a 2-core machine
// the server shares the workers' cores, so the gain it reports is what a
// second core gives the workers and the server together. It reports the
// particles per second from the moment the workers started their
// pipelines (once they saw each other) to the moment the sink's output is
// complete, and the CPU time of the workers and of the benchmark's
// process per particle (over the whole run, their ends included, so that
// its "cores" overstates the cores busy while the output came).
// The output must be the single-process run's. Run it with
// -benchtime=1x.
func BenchmarkPinnedWorkers(b *testing.B) {
	if _, err := exec.LookPath("taskset"); err != nil {
		b.Fatal("taskset (util-linux) is needed to pin the workers: ", err)
	}
	file, particles := longRecording(b, benchRepeats)
	want := sortedLines(singleProcess(b, file))
	c := natstest.StartCluster(b, 1)
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			var elapsed, cpu time.Duration
			for i := range b.N {
				name := fmt.Sprintf("pinned-%d-%d-%d", n, i, time.Now().UnixNano())
				e, c, out := runPinned(b, c.URL(), file, name, n, len(want)-1)
				elapsed, cpu = elapsed+e, cpu+c
				if got := sortedLines(out); !slices.Equal(got, want) {
					b.Fatalf("%d lines of output, not the %d of the single-process run", len(got), len(want))
				}
			}
			reportRun(b, particles, elapsed, cpu, 0)
		})
	}
}

// startedAt finds the line a worker process writes once it started its
// pipeline (awaitWorkers).
var startedAt = regexp.MustCompile(`worker: started at (\d+)`)

// runPinned runs file as pipeline name on n worker processes, worker i
// pinned to core i, and returns the time from the first start of a
// pipeline to the moment the workers' output held lines lines (the
// workers end a little later: a copy of a unit that another worker runs
// ends once that one ended), the CPU time of the workers and of this
// process over the whole run, and the workers' output.
func runPinned(b *testing.B, url, file, name string, n, lines int) (elapsed, cpu time.Duration, out string) {
	b.Helper()
	cpu0 := cpuTime(b)
	procs := make([]*exec.Cmd, n)
	outs := make([]lockedBuffer, n)
	errs := make([]lockedBuffer, n)
	exited := make(chan error, n)
	for i := range procs {
		cmd := exec.Command("taskset", "-c", strconv.Itoa(i), os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			workerEnv+"="+strings.Join([]string{url, file, name, fmt.Sprintf("w%d", i+1), time.Hour.String()}, "|"),
			waitWorkersEnv+"="+strconv.Itoa(n), replicasEnv+"=1")
		cmd.Stdout, cmd.Stderr = &outs[i], &errs[i]
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		procs[i] = cmd
		go func() { exited <- cmd.Wait() }()
	}
	written := func() int {
		total := 0
		for i := range outs {
			total += strings.Count(outs[i].String(), "\n")
		}
		return total
	}
	var complete time.Time
	for left := n; left > 0; {
		select {
		case err := <-exited:
			left--
			if err != nil {
				b.Fatalf("a worker: %v", err)
			}
		case <-time.After(5 * time.Millisecond):
		}
		if complete.IsZero() && written() >= lines {
			complete = time.Now()
		}
	}
	if complete.IsZero() {
		complete = time.Now()
	}
	var first int64
	for i, cmd := range procs {
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		m := startedAt.FindStringSubmatch(errs[i].String())
		if m == nil {
			b.Fatalf("worker w%d did not say when it started: %s", i+1, errs[i].String())
		}
		at, _ := strconv.ParseInt(m[1], 10, 64)
		if first == 0 || at < first {
			first = at
		}
		out += outs[i].String()
	}
	return complete.Sub(time.Unix(0, first)), cpu + cpuTime(b) - cpu0, out
}
