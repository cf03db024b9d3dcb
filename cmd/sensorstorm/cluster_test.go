package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/cluster"
	"github.com/sensorstorm/sensorstorm/internal/proctest"
	"github.com/sensorstorm/sensorstorm/jetstreamedge"
	"github.com/sensorstorm/sensorstorm/natstest"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Two workers run a recording's pipeline on a JetStream server: together
// they write what one process writes, and cluster status shows the
// source done and the pipeline's units.
func TestRunOnACluster(t *testing.T) {
	var single, stderr strings.Builder
	const file = "../../pipelines/library1-mean.yaml"
	require.Equal(t, exitOK, run(context.Background(), []string{"run", file}, &single, &stderr), stderr.String())

	c := natstest.StartCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	outs := make([]strings.Builder, 2)
	errs := make([]strings.Builder, 2)
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i, name := range []string{"w1", "w2"} {
		wg.Go(func() {
			codes[i] = run(ctx, []string{"run", "--cluster", c.URL(), "--worker", name, file}, &outs[i], &errs[i])
		})
	}
	// With two workers, each copy of an instance that ran nothing gets
	// the end of stream the other worker sends again, and both end.
	wg.Wait()
	require.NoError(t, ctx.Err(), "the workers ended on their own")
	var got []string
	for i := range outs {
		require.Equal(t, exitOK, codes[i], errs[i].String())
		got = append(got, strings.SplitAfter(outs[i].String(), "\n")...)
	}
	want := strings.SplitAfter(single.String(), "\n")
	slices.Sort(want)
	got = slices.DeleteFunc(got, func(s string) bool { return s == "" })
	want = slices.DeleteFunc(want, func(s string) bool { return s == "" })
	slices.Sort(got)
	require.Equal(t, want, got)

	var status, statusErr strings.Builder
	require.Equal(t, exitOK, run(context.Background(), []string{"cluster", "status", "--cluster", c.URL()}, &status, &statusErr), statusErr.String())
	assert.Contains(t, status.String(), "pipeline library1-mean:")
	assert.Regexp(t, `source\.wsn\.0\s+done`, status.String())
	for _, unit := range []string{"dedup_0", "dedup_1", "out_0"} {
		assert.Regexp(t, unit+`\s+\w+(\s+\d+){3}\s+\d+ at \d\d:\d\d:\d\d`, status.String(), "the unit and its newest checkpoint")
	}
	assert.NotContains(t, status.String(), "stats10m_", "stats10m is chained to dedup by forward edges: no unit of its own")

	var one, oneErr strings.Builder
	require.Equal(t, exitOK, run(context.Background(), []string{"cluster", "status", "--cluster", c.URL(), "--pipeline", "library1-mean", "-o", "json"}, &one, &oneErr), oneErr.String())
	var statuses []cluster.Status
	require.NoError(t, json.Unmarshal([]byte(one.String()), &statuses), one.String())
	require.Len(t, statuses, 1)
	assert.Equal(t, "library1-mean", statuses[0].Pipeline)
	assert.Equal(t, []string{"source.wsn.0"}, statuses[0].Done)

	// Run again, it would replay nothing: it says so and how to re-run.
	var again, againErr strings.Builder
	assert.Equal(t, exitError, run(ctx, []string{"run", "--cluster", c.URL(), "--worker", "w3", file}, &again, &againErr))
	assert.Empty(t, again.String())
	assert.Contains(t, againErr.String(), `pipeline "library1-mean" already ran to its end on this cluster`)
	assert.Contains(t, againErr.String(), "--pipeline-name library1-mean-2")
}

// A pipeline whose MQTT source acknowledges from a local spool is refused
// on a cluster before anything connects, with the way out.
func TestRunOnAClusterRefusesASpool(t *testing.T) {
	file := filepath.Join(t.TempDir(), "feed.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`sources:
  - name: sensors
    mqtt: {broker: tcp://127.0.0.1:1883, topics: [sensors/#], mode: spool, state_dir: state}
bolts:
  - name: out
    input: {from: sensors}
    sink: {file: "-"}
`), 0o600))
	var stdout, stderr strings.Builder
	// Nothing listens on port 1: a connection attempt would fail otherwise.
	assert.Equal(t, exitError, run(context.Background(), []string{"run", "--cluster", "nats://127.0.0.1:1", file}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `feed.yaml:2:5: source "sensors": mqtt mode spool cannot run on a cluster`)
	assert.Contains(t, stderr.String(), "set mode: tree")
}

func TestClusterStatusNeedsAURL(t *testing.T) {
	var stdout, stderr strings.Builder
	assert.Equal(t, exitUsage, run(context.Background(), []string{"cluster", "status"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "--cluster is required")
}

// A worker's metrics include its transport's counters.
func TestMetricsRegistryHasTheTransport(t *testing.T) {
	topo, err := topology.New(topology.Config{})
	require.NoError(t, err)
	var stats jetstreamedge.Stats
	stats.Published.Add(2)
	families, err := metricsRegistry(topo, jetstreamedge.NewCollector(&stats)).Gather()
	require.NoError(t, err)
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	assert.Contains(t, names, "sensorstorm_jetstream_published_messages_total")
	assert.Contains(t, names, "go_goroutines")
}

// Issue 27's scenario through run --cluster with its defaults
// (cluster/testdata/library1-rooms.yaml: per-mote one-minute means,
// parallelism 4, per-room five-minute statistics, parallelism 2, into a
// file sink, at 400 times real time) on two worker processes in one
// directory; the worker
// holding the source's lease is killed with SIGKILL as it takes it and
// started again under a new name. Each worker appends to its own file,
// or, where its sink restored a checkpoint of another worker's file,
// continues that one; together the files hold the lines of one process,
// none twice, no NUL byte.
func TestRunOnAClusterKilledLeaseHolder(t *testing.T) {
	bin := buildBinary(t)
	spec, err := os.ReadFile("../../cluster/testdata/library1-rooms.yaml")
	require.NoError(t, err)
	recording, err := filepath.Abs("../../cluster/testdata/library1-rooms.lp")
	require.NoError(t, err)
	dir := t.TempDir()
	file := filepath.Join(dir, "rooms.yaml")
	require.NoError(t, os.WriteFile(file, bytes.Replace(spec, []byte("[library1-rooms.lp]"), fmt.Appendf(nil, "[%q]", recording), 1), 0o644))
	var stdout, stderr strings.Builder
	require.Equal(t, exitOK, run(context.Background(), []string{"run", file}, &stdout, &stderr), stderr.String())
	want := strings.SplitAfter(readFile(t, filepath.Join(dir, "out.lp")), "\n")
	want = slices.DeleteFunc(want, func(s string) bool { return s == "" })
	require.Len(t, want, 21)
	require.NoError(t, os.Remove(filepath.Join(dir, "out.lp")))

	c := natstest.StartCluster(t, 1)
	type worker struct {
		cmd    *exec.Cmd
		stderr *proctest.LockedBuffer
		done   chan error
	}
	start := func(name string) *worker {
		w := &worker{cmd: exec.Command(bin, "run", "--cluster", c.URL(), "--worker", name, file), stderr: &proctest.LockedBuffer{}, done: make(chan error, 1)}
		w.cmd.Stderr = w.stderr
		require.NoError(t, w.cmd.Start())
		go func() { w.done <- w.cmd.Wait() }()
		t.Cleanup(func() {
			_ = w.cmd.Process.Kill()
			if t.Failed() {
				t.Logf("worker %s:\n%s", name, lastLines(w.stderr.String(), 30))
			}
		})
		return w
	}
	workers := map[string]*worker{"w1": start("w1"), "w2": start("w2")}
	holder := ""
	waitUntil(t, 60*time.Second, "a worker to take the source's lease", func() bool {
		for name, w := range workers {
			if strings.Contains(w.stderr.String(), `msg="lease taken"`) {
				holder = name
			}
		}
		return holder != ""
	})
	require.NoError(t, workers[holder].cmd.Process.Signal(syscall.SIGKILL))
	<-workers[holder].done
	delete(workers, holder)
	workers["w3"] = start("w3")
	for name, w := range workers {
		select {
		case err := <-w.done:
			require.NoError(t, err, "worker %s: %s", name, lastLines(w.stderr.String(), 30))
		case <-time.After(3 * time.Minute):
			t.Fatalf("worker %s did not finish", name)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "out.*.lp"))
	require.NoError(t, err)
	// A worker whose sink took over another's file, its own still empty,
	// removed its own.
	require.NotEmpty(t, files)
	require.LessOrEqual(t, len(files), 3, "a file per worker at most: %v", files)
	var got []string
	for _, f := range files {
		out := readFile(t, f)
		require.NotContains(t, out, "\x00", "NUL bytes in %s", f)
		got = append(got, slices.DeleteFunc(strings.SplitAfter(out, "\n"), func(s string) bool { return s == "" })...)
	}
	slices.Sort(want)
	slices.Sort(got)
	require.Equal(t, want, got)
}
