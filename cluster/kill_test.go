package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/cluster"
	"github.com/sensorstorm/sensorstorm/jetstreamedge"
	"github.com/sensorstorm/sensorstorm/pipeline"
)

// workerEnv makes the test binary a worker process: TestMain runs
// workerProcess with the settings in the variable,
// "URL|FILE|PIPELINE|NAME|REBALANCE_DELAY".
const workerEnv = "SENSORSTORM_TEST_WORKER"

// workerProcess runs a pipeline file as a worker until every unit it has
// ended, or until SIGTERM: then it hands its share over to the other
// workers (Worker.Leave), writes "worker: handed over" to stderr when it
// did, and stops. It writes the sink's output to stdout, and its logs to
// stderr.
func workerProcess(settings string) int {
	parts := strings.Split(settings, "|")
	if len(parts) != 5 {
		fmt.Fprintln(os.Stderr, "worker: bad settings", settings)
		return 2
	}
	url, file, name, worker := parts[0], parts[1], parts[2], parts[3]
	delay, err := time.ParseDuration(parts[4])
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 2
	}
	term, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	defer nc.Close()
	cfg := testConfig(name, worker)
	cfg.RebalanceDelay = delay
	if r, err := strconv.Atoi(os.Getenv(replicasEnv)); err == nil {
		cfg.Edges.Replicas = r
	}
	if ttl, err := time.ParseDuration(os.Getenv(leaseTTLEnv)); err == nil {
		cfg.LeaseTTL, cfg.Edges.PinnedTTL = ttl, ttl
	}
	level := slog.LevelInfo
	if os.Getenv("DEBUGLOG") == "debug" {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	w, err := cluster.Join(term, nc, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	p, err := pipeline.Load(file)
	if err == nil {
		var built *pipeline.Built
		built, err = p.Build(pipeline.Options{Stdout: os.Stdout, Logger: cfg.Logger, Transport: w.Transport(), Checkpoints: w.CheckpointStore(), Lease: w.LeaseSource, LeaseLiveSource: w.LeaseLiveSource, Incarnation: w.Incarnation(), Cluster: name, Worker: worker})
		if err == nil {
			runCtx, stopRun := context.WithCancel(context.Background())
			announceCtx, stopAnnouncing := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { _ = w.Run(announceCtx) })
			wg.Go(func() {
				defer stopRun()
				select {
				case <-term.Done():
				case <-runCtx.Done():
					return
				}
				leaveCtx, cancel := context.WithTimeout(runCtx, 2*cfg.LeaseTTL)
				defer cancel()
				if err := w.Leave(leaveCtx); err != nil {
					fmt.Fprintln(os.Stderr, "worker: leaving:", err)
					return
				}
				fmt.Fprintln(os.Stderr, "worker: handed over")
			})
			awaitWorkers(w)
			err = built.Run(runCtx)
			stopRun()
			stopAnnouncing()
			wg.Wait()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// replicasEnv, when set, is the number of replicas of a worker process's
// stream and buckets, instead of testConfig's.
const replicasEnv = "SENSORSTORM_TEST_REPLICAS"

// leaseTTLEnv, when set, is the lease TTL of a worker process, and its
// pinned TTL, instead of testConfig's.
const leaseTTLEnv = "SENSORSTORM_TEST_LEASE_TTL"

// waitWorkersEnv, when set to a number N, makes a worker process start
// its pipeline only once it sees N workers, so that the units are
// assigned among them from the start (BenchmarkPinnedWorkers).
const waitWorkersEnv = "SENSORSTORM_TEST_WAIT_WORKERS"

// awaitWorkers waits, for at most a minute, until w sees as many workers
// as waitWorkersEnv says, then writes "worker: started at NANOS" to
// stderr, the Unix time in nanoseconds.
func awaitWorkers(w *cluster.Worker) {
	n, _ := strconv.Atoi(os.Getenv(waitWorkersEnv))
	for deadline := time.Now().Add(time.Minute); len(w.Workers()) < n && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n > 0 {
		fmt.Fprintf(os.Stderr, "worker: started at %d\n", time.Now().UnixNano())
	}
}

// testConfig is the configuration of the test workers: units and leases
// move within a few seconds.
func testConfig(name, worker string) cluster.Config {
	return cluster.Config{
		Pipeline: name, Worker: worker, LeaseTTL: 3 * time.Second, RebalanceDelay: time.Second,
		Edges: jetstreamedge.Config{Replicas: 3, AckWait: 5 * time.Second, PinnedTTL: 2 * time.Second, PublishTimeout: 2 * time.Second},
	}
}

// process is a worker process of a test.
type process struct {
	name string
	cmd  *exec.Cmd
	out  lockedBuffer
	errs lockedBuffer
	done chan struct{} // closed when the process exited, with err set
	err  error
}

// startProcess starts a worker process whose units stay with the first
// worker that pulls for them until it is killed: the tests of kills are
// not about hand-overs.
func startProcess(t *testing.T, url, file, pipelineName, name string) *process {
	t.Helper()
	return startProcessWith(t, url, file, pipelineName, name, time.Hour)
}

// startProcessWith starts a worker process with the rebalance delay
// given.
func startProcessWith(t *testing.T, url, file, pipelineName, name string, rebalanceDelay time.Duration) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+strings.Join([]string{url, file, pipelineName, name, rebalanceDelay.String()}, "|"))
	return startCmd(t, cmd, name)
}

// startCmd starts cmd as the process name, killed when the test ends; a
// worker's (a name starting with w) standard error is logged if the test
// failed.
func startCmd(t *testing.T, cmd *exec.Cmd, name string) *process {
	t.Helper()
	p := &process{name: name, done: make(chan struct{}), cmd: cmd}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errs
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() && strings.HasPrefix(name, "w") {
			t.Logf("worker %s: stderr:\n%s", name, p.errs.String())
		}
	})
	return p
}

func lines(s string) []string {
	return slices.DeleteFunc(strings.SplitAfter(s, "\n"), func(l string) bool { return l == "" })
}

// SIGKILL of the worker replaying the recording, mid-run: its lease and
// its units move to the other worker, which resumes the recording past
// its checkpoint and finishes the run, with the single-process output.
//
// The particles between the checkpoint and the kill are emitted again, and
// an instance that moved derives the same identities from them, so that
// the receivers downstream drop the copies. The messages the killed worker
// had not acknowledged come to the survivor again, before any newer one
// (see the package doc of jetstreamedge), and rebuild the windows open at
// the kill.
func TestKilledWorkersUnitsMove(t *testing.T) {
	want := lines(singleProcess(t, threeStages))
	c := natstestCluster(t)
	name := fmt.Sprintf("kill-%d", time.Now().UnixNano())
	const paced = "testdata/library1-mean-paced.yaml"
	nc, err := nats.Connect(c.URL())
	require.NoError(t, err)
	defer nc.Close()
	procs := []*process{startProcess(t, c.URL(), paced, name, "w1")}
	require.Eventually(t, func() bool { return len(status(t, nc, name).Workers) == 1 }, 30*time.Second, 20*time.Millisecond)
	procs = append(procs, startProcess(t, c.URL(), paced, name, "w2"))
	// Kill the lease holder once a quarter of the output is out.
	require.Eventually(t, func() bool {
		n := 0
		for _, p := range procs {
			n += len(lines(p.out.String()))
		}
		return n >= len(want)/4
	}, 60*time.Second, 10*time.Millisecond, "the replay makes progress")
	// The holder is the worker that took the lease last, as its log says:
	// on a machine so loaded that a worker starves past the lease's TTL
	// the lease moves before the kill, and the status may be read only
	// after the run ended and its stream went.
	holder := leaseHolder(procs, "source.wsn.0")
	require.NotEmpty(t, holder, "the lease holder is known")
	var killed, survivor *process
	for _, p := range procs {
		if p.name == holder {
			killed = p
		} else {
			survivor = p
		}
	}
	require.NotNil(t, killed)
	require.NoError(t, killed.cmd.Process.Signal(syscall.SIGKILL))
	<-killed.done
	t.Logf("killed %s after %d lines of output from both", killed.name, len(lines(killed.out.String()))+len(lines(survivor.out.String())))

	select {
	case <-survivor.done:
		require.NoError(t, survivor.err, "survivor: %s", survivor.errs.String())
	case <-time.After(90 * time.Second):
		t.Fatalf("the survivor did not finish: %s", survivor.errs.String())
	}
	got := append(lines(killed.out.String()), lines(survivor.out.String())...)
	require.NotEmpty(t, lines(survivor.out.String()), "the survivor runs the sink")
	requireNoneLost(t, want, got)
}

// leaseHolder returns the worker among procs that took lease last, by the
// time of its "lease taken" log line.
func leaseHolder(procs []*process, lease string) string {
	var holder, at string
	for _, p := range procs {
		for _, l := range strings.Split(p.errs.String(), "\n") {
			if !strings.Contains(l, `msg="lease taken"`) || !strings.Contains(l, "lease="+lease) {
				continue
			}
			if t, _, _ := strings.Cut(strings.TrimPrefix(l, "time="), " "); t > at {
				holder, at = p.name, t
			}
		}
	}
	return holder
}

// requireNoneLost checks that got has every line of want, as many times,
// and that each line beyond is a copy of one of want: what a killed sink
// wrote and had not acknowledged, the worker taking it over writes again
// (at least once, copies counted). A window that fires again with other
// content fails it.
func requireNoneLost(t *testing.T, want, got []string) {
	t.Helper()
	requireLines(t, want, got, true)
}

// requireSameLines checks that got has the lines of want, as many times,
// in any order, and logs those it lacks and those beyond.
func requireSameLines(t *testing.T, want, got []string) {
	t.Helper()
	requireLines(t, want, got, false)
}

func requireLines(t *testing.T, want, got []string, copies bool) {
	t.Helper()
	missing, extra := diffLines(want, got)
	if copies {
		wanted := map[string]bool{}
		for _, l := range want {
			wanted[l] = true
		}
		extra = slices.DeleteFunc(extra, func(l string) bool {
			if wanted[l] {
				t.Logf("written again: %s", strings.TrimSpace(l))
				return true
			}
			return false
		})
	}
	for _, l := range missing {
		t.Logf("missing: %s", strings.TrimSpace(l))
	}
	for _, l := range extra {
		t.Logf("extra: %s", strings.TrimSpace(l))
	}
	require.Empty(t, missing, "lines of the single-process output missing")
	require.Empty(t, extra, "lines beyond the single-process output")
}

// diffLines returns the lines of want missing from got, and those of got
// beyond want, counting repeats.
func diffLines(want, got []string) (missing, extra []string) {
	n := map[string]int{}
	for _, l := range want {
		n[l]++
	}
	for _, l := range got {
		n[l]--
	}
	for l, c := range n {
		for ; c > 0; c-- {
			missing = append(missing, l)
		}
		for ; c < 0; c++ {
			extra = append(extra, l)
		}
	}
	return missing, extra
}

// roomsPipeline writes issue 27's pipeline (testdata/library1-rooms.yaml)
// into dir, reading its recording where it is, at speed (its own 400, or
// max), and writing its sink's file out.lp in dir. It returns the
// pipeline's file.
func roomsPipeline(t *testing.T, dir, speed string) string {
	t.Helper()
	spec, err := os.ReadFile("testdata/library1-rooms.yaml")
	require.NoError(t, err)
	recording, err := filepath.Abs("testdata/library1-rooms.lp")
	require.NoError(t, err)
	spec = bytes.Replace(spec, []byte("[library1-rooms.lp], speed: 400"), fmt.Appendf(nil, "[%q], speed: %s", recording, speed), 1)
	file := filepath.Join(dir, "rooms.yaml")
	require.NoError(t, os.WriteFile(file, spec, 0o644))
	return file
}

// roomsOutput runs issue 27's pipeline in one process and returns the
// directory of its output, out.lp.
func roomsOutput(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	singleProcess(t, roomsPipeline(t, dir, "max"))
	return dir
}

// workerFiles returns the lines of the files the workers' sinks wrote in
// dir (out.WORKER.lp), checking that none holds a NUL byte.
func workerFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "out.*.lp"))
	require.NoError(t, err)
	slices.Sort(files)
	var got []string
	for _, f := range files {
		out := readFile(t, f)
		require.NotContains(t, out, "\x00", "NUL bytes in %s", f)
		t.Logf("%s: %d lines", filepath.Base(f), len(lines(out)))
		got = append(got, lines(out)...)
	}
	return got
}

// SIGKILL of the worker holding the source's lease in the first seconds
// of a replay (as it takes the lease, once it recorded a checkpoint, or
// once the first windows are out), started again under the same name or
// a new one: the files the workers' sinks wrote hold the single-process
// output, no line missing, and no NUL byte; a line beyond it can only be
// a copy that a sink on the killed worker wrote and had not acknowledged
// (one of ten runs killed once lines were out wrote three again; none
// killed earlier did). When every worker's sink wrote one path, the copy
// of the sink that took over, or merely closed, truncated what the other
// had written: 6 to 15 of the 21 lines went missing.
func TestKilledLeaseHolderRestarted(t *testing.T) {
	want := lines(readFile(t, filepath.Join(roomsOutput(t), "out.lp")))
	require.Len(t, want, 21)

	leased := func(nc *nats.Conn, name, _ string) bool {
		_, ok := entry(nc, name, "leases", "source.wsn.0")
		return ok
	}
	checkpointed := func(nc *nats.Conn, name, _ string) bool {
		_, ok := entry(nc, name, "done", "checkpoint.source.wsn.0")
		return ok
	}
	// The first five-minute windows are out: the sink moves mid-output
	// when its worker is killed.
	written := func(_ *nats.Conn, _, dir string) bool {
		files, _ := filepath.Glob(filepath.Join(dir, "out.*.lp"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && bytes.Count(b, []byte("\n")) >= 6 {
				return true
			}
		}
		return false
	}
	c := natstestCluster(t)
	for _, tc := range []struct {
		when, restart string
		// killNow tells when to kill the holder of the lease.
		killNow func(nc *nats.Conn, name, dir string) bool
	}{
		{"as it takes the lease", "same name", leased},
		{"as it takes the lease", "new name", leased},
		{"after its first checkpoint", "same name", checkpointed},
		{"after its first checkpoint", "new name", checkpointed},
		{"once lines are out", "same name", written},
		{"once lines are out", "new name", written},
	} {
		t.Run(tc.when+"/"+tc.restart, func(t *testing.T) {
			dir := t.TempDir()
			file := roomsPipeline(t, dir, "400")
			name := fmt.Sprintf("rooms-%d", time.Now().UnixNano())
			nc, procs := startTwo(t, c.URL(), file, name)
			require.Eventually(t, func() bool { return tc.killNow(nc, name, dir) }, 60*time.Second, 5*time.Millisecond)
			// The lease's value is its holder's name. On a loaded machine
			// the replay may have ended, and its lease gone, by the time
			// lines are out: then the holder is the worker that took it.
			holder, _ := entry(nc, name, "leases", "source.wsn.0")
			if holder == "" {
				holder = leaseHolder(procs, "source.wsn.0")
			}
			i := slices.IndexFunc(procs, func(p *process) bool { return p.name == holder })
			require.NotEqual(t, -1, i, "the lease holder %q is a worker", holder)
			require.NoError(t, procs[i].cmd.Process.Signal(syscall.SIGKILL))
			<-procs[i].done
			again := holder
			if tc.restart == "new name" {
				again = "w3"
			}
			procs[i] = startProcess(t, c.URL(), file, name, again)
			awaitProcesses(t, 180*time.Second, procs...)
			// Each worker wrote its own file.
			requireNoneLost(t, want, workerFiles(t, dir))
		})
	}
}

// awaitProcesses waits for procs to exit, each without error.
func awaitProcesses(t *testing.T, within time.Duration, procs ...*process) {
	t.Helper()
	deadline := time.After(within)
	for _, p := range procs {
		select {
		case <-p.done:
			require.NoError(t, p.err, "worker %s: %s", p.name, p.errs.String())
		case <-deadline:
			t.Fatalf("worker %s did not finish within %s", p.name, within)
		}
	}
}

// startTwo starts worker w1 of pipeline file under name, and w2 once w1
// announced itself, so that w1 leads; it returns them and a connection to
// the cluster at url, closed when t ends.
func startTwo(t *testing.T, url, file, name string) (*nats.Conn, []*process) {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	procs := []*process{startProcess(t, url, file, name, "w1")}
	require.Eventually(t, func() bool { _, ok := entry(nc, name, "workers", "w1"); return ok }, 60*time.Second, 20*time.Millisecond)
	return nc, append(procs, startProcess(t, url, file, name, "w2"))
}

// entry returns the value under key in the bucket of pipeline name whose
// name ends in suffix (leases, workers, done), and whether it is there:
// cheaper than the status on a loaded machine.
func entry(nc *nats.Conn, name, suffix, key string) (string, bool) {
	js, err := jetstream.New(nc)
	if err != nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, "sensorstorm_"+jetstreamedge.Token(name)+"_"+suffix)
	if err != nil {
		return "", false
	}
	e, err := kv.Get(ctx, key)
	if err != nil {
		return "", false
	}
	return string(e.Value()), true
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
