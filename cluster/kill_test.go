package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	w, err := cluster.Join(term, nc, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	p, err := pipeline.Load(file)
	if err == nil {
		var built *pipeline.Built
		built, err = p.Build(pipeline.Options{Stdout: os.Stdout, Transport: w.Transport(), Lease: w.LeaseSource, LeaseFeed: w.LeaseFeed, Incarnation: w.Incarnation(), Cluster: name, Worker: worker})
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
	p := &process{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), workerEnv+"="+strings.Join([]string{url, file, pipelineName, name, rebalanceDelay.String()}, "|"))
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errs
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
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
