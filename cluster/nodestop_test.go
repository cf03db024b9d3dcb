package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/jetstreamedge"
	"github.com/sensorstorm/sensorstorm/natstest"
)

// streamLeader returns the index in c of the server leading the stream of
// pipeline name: the node whose loss fails publishes until another is
// elected.
func streamLeader(t *testing.T, nc *nats.Conn, name string) int {
	t.Helper()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, jetstreamedge.StreamName(name))
	require.NoError(t, err)
	info := s.CachedInfo()
	require.NotNil(t, info.Cluster, "the stream is replicated")
	// natstest names its servers n1, n2, ...
	i, err := strconv.Atoi(strings.TrimPrefix(info.Cluster.Leader, "n"))
	require.NoError(t, err, "leader %q", info.Cluster.Leader)
	return i - 1
}

// Stopping the NATS node that leads the pipeline's stream mid-run, and
// starting it again later, loses nothing and changes nothing in the
// output (replicas 3): publishes that fail while another leader is
// elected are retried in place, and the receivers restore each sender's
// order when redeliveries come after newer messages.
func TestNATSNodeRestartKeepsTheOutput(t *testing.T) {
	want := lines(singleProcess(t, threeStages))
	c := natstest.StartCluster(t, 3)
	name := fmt.Sprintf("node-%d", time.Now().UnixNano())
	// File sinks: standard output writes again what came after a
	// checkpoint its unit restored (38 lines in one run).
	dir := t.TempDir()
	paced := pacedToFiles(t, dir)
	workers := []*clusterWorker{
		startWorker(t, c, paced, name, "w1"),
		startWorker(t, c, paced, name, "w2"),
	}
	require.Eventually(t, func() bool { return len(status(t, workers[0].nc, name).Workers) == 2 }, 10*time.Second, 20*time.Millisecond)
	for _, w := range workers {
		w.run()
	}
	require.Eventually(t, func() bool { return fileLines(t, dir) >= len(want)/4 }, 60*time.Second, 10*time.Millisecond,
		"the replay makes progress")
	node := streamLeader(t, workers[0].nc, name)
	c.Stop(node)
	t.Logf("stopped node %d after %d lines", node, fileLines(t, dir))
	// Two minutes: on a machine loaded beside the whole suite, the
	// streams' new leaders and the consumers moving to them once took
	// longer than one.
	require.Eventually(t, func() bool { return fileLines(t, dir) >= len(want)*3/8 }, 2*time.Minute, 10*time.Millisecond,
		"the replay goes on without the node")
	c.Start(node)
	c.WaitReady()
	t.Logf("started node %d after %d lines", node, fileLines(t, dir))
	sinkEnded := assert.Eventually(t, func() bool { return ended(workers, "out") == 1 }, 90*time.Second, 50*time.Millisecond,
		"the sink instance ends on one worker")
	for _, w := range workers {
		w.stop()
		require.NoError(t, w.err, "worker %s", w.name)
		t.Logf("worker %s: units %v, transport %+v", w.name,
			w.w.Transport().ActiveUnits(time.Time{}), counts(w.w.Transport().Stats()))
		for _, c := range []string{"wsn", "dedup", "stats10m", "out"} {
			st := w.built.Stats(c)
			t.Logf("  %s: in %d late %d behind %d retried %d failed %d dup %d", c, st.In.Load(), st.Late.Load(), st.Behind.Load(), st.Retried.Load(), st.Failed.Load(), st.Duplicates.Load())
		}
	}
	require.True(t, sinkEnded)
	requireSameLines(t, want, workerFiles(t, dir))
}
