package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/cluster"
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
	for _, unit := range []string{"dedup_0", "dedup_1", "stats10m_0", "stats10m_1", "out_0"} {
		assert.Regexp(t, unit+`\s+\w+(\s+\d+){3}\s+\d{4}-\d\d-\d\dT`, status.String(), "the unit and how far it finished")
	}

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
