package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/cluster"
	"github.com/sensorstorm/sensorstorm/internal/proctest"
	"github.com/sensorstorm/sensorstorm/jetstreamedge"
	"github.com/sensorstorm/sensorstorm/natstest"
	"github.com/sensorstorm/sensorstorm/pipeline"
)

func TestMain(m *testing.M) {
	if settings := os.Getenv(workerEnv); settings != "" {
		os.Exit(workerProcess(settings))
	}
	if settings := os.Getenv(natsEnv); settings != "" {
		os.Exit(natsProcess(settings))
	}
	goleak.VerifyTestMain(m)
}

// natstestCluster starts a 3-node JetStream cluster.
func natstestCluster(t *testing.T) *natstest.Cluster { return natstest.StartCluster(t, 3) }

// threeStages is a pipeline of three stages over the test recording:
// fields groupings into a dedup and a ten-minute window, then a sink.
const threeStages = "../pipelines/library1-mean.yaml"

// lockedBuffer is a sink's standard output, read while it runs.
type lockedBuffer = proctest.LockedBuffer

// singleProcess runs the pipeline file in one process and returns its
// output.
func singleProcess(t testing.TB, file string) string {
	t.Helper()
	p, err := pipeline.Load(file)
	require.NoError(t, err)
	var out lockedBuffer
	built, err := p.Build(pipeline.Options{Stdout: &out})
	require.NoError(t, err)
	require.NoError(t, built.Run(context.Background()))
	return out.String()
}

// clusterWorker is one worker process of a test, in this process.
type clusterWorker struct {
	name   string
	nc     *nats.Conn
	w      *cluster.Worker
	built  *pipeline.Built
	out    lockedBuffer
	cancel context.CancelFunc
	wg     sync.WaitGroup
	err    error
	ran    chan struct{} // closed when the pipeline's run returned, with err set
}

func startWorker(t testing.TB, c *natstest.Cluster, file, pipelineName, name string) *clusterWorker {
	t.Helper()
	return startWorkerWith(t, c, file, testConfig(pipelineName, name))
}

// startWorkerWith starts a worker configured by cfg, which names the
// pipeline and the worker.
func startWorkerWith(t testing.TB, c *natstest.Cluster, file string, cfg cluster.Config) *clusterWorker {
	t.Helper()
	pipelineName, name := cfg.Pipeline, cfg.Worker
	cw := &clusterWorker{name: name}
	var err error
	opts := []nats.Option{nats.Name(name)}
	if os.Getenv("DEBUGLOG") != "" {
		opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			slog.Error("nats", "w", name, "subject", subject, "err", err)
		}))
	}
	cw.nc, err = nats.Connect(c.URL(), opts...)
	require.NoError(t, err)
	t.Cleanup(cw.nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if os.Getenv("DEBUGLOG") != "" {
		level := slog.LevelInfo
		if os.Getenv("DEBUGLOG") == "debug" {
			level = slog.LevelDebug
		}
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("w", name)
	}
	cw.w, err = cluster.Join(ctx, cw.nc, cfg)
	require.NoError(t, err)
	p, err := pipeline.Load(file)
	require.NoError(t, err)
	cw.built, err = p.Build(pipeline.Options{Stdout: &cw.out, Transport: cw.w.Transport(), Checkpoints: cw.w.CheckpointStore(), Lease: cw.w.LeaseSource, LeaseLiveSource: cw.w.LeaseLiveSource, Incarnation: cw.w.Incarnation(), Cluster: pipelineName, Worker: name})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(context.Background())
	cw.cancel = stop
	cw.wg.Go(func() { _ = cw.w.Run(runCtx) })
	return cw
}

// run starts the worker's pipeline.
func (cw *clusterWorker) run() {
	ctx, cancel := context.WithCancel(context.Background())
	stopAnnouncing := cw.cancel
	cw.cancel = func() {
		cancel()
		stopAnnouncing()
	}
	cw.ran = make(chan struct{})
	cw.wg.Go(func() {
		defer close(cw.ran)
		cw.err = cw.built.Run(ctx)
	})
}

// status returns the status of the pipeline name, empty when it cannot
// be read.
func status(t testing.TB, nc *nats.Conn, name string) cluster.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// This pipeline's alone: the tests' cluster holds every earlier
	// test's pipelines too, slow to read on a loaded machine.
	st, err := cluster.ReadPipelineStatus(ctx, nc, name)
	if err != nil {
		t.Logf("status: %v", err)
		return cluster.Status{}
	}
	return st
}

func (cw *clusterWorker) stop() {
	cw.cancel()
	cw.wg.Wait()
}

// ended sums the instances of component that ended over the workers.
func ended(workers []*clusterWorker, component string) uint64 {
	var n uint64
	for _, w := range workers {
		n += w.built.Stats(component).Ended.Load()
	}
	return n
}

func sortedLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	slices.Sort(lines)
	return lines
}

// A replayed recording through a three-stage pipeline (fields groupings,
// windows) on two workers gives the output of the single-process run.
func TestTwoWorkersGiveTheSingleProcessOutput(t *testing.T) {
	want := singleProcess(t, threeStages)
	require.NotEmpty(t, want)
	c := natstest.StartCluster(t, 3)
	name := fmt.Sprintf("mean-%d", time.Now().UnixNano())
	workers := []*clusterWorker{
		startWorker(t, c, threeStages, name, "w1"),
		startWorker(t, c, threeStages, name, "w2"),
	}
	// Each sees both, and pulls for the units assigned to it.
	require.Eventually(t, func() bool { return len(workers[0].w.Workers()) == 2 && len(workers[1].w.Workers()) == 2 }, 10*time.Second, 20*time.Millisecond)
	for _, w := range workers {
		w.run()
	}
	require.Eventually(t, func() bool { return ended(workers, "out") == 1 }, 90*time.Second, 50*time.Millisecond,
		"the sink instance ends on one worker")
	var report strings.Builder
	st := status(t, workers[0].nc, name)
	require.NoError(t, st.Write(&report))
	t.Log("\n" + report.String())
	require.Equal(t, []string{"source.wsn.0"}, st.Done)
	for _, u := range st.Units {
		require.NotZero(t, u.Checkpoint, "unit %s checkpointed", u.Consumer)
	}
	var got strings.Builder
	for _, w := range workers {
		require.Positive(t, w.w.Transport().Stats().Received.Load(), "worker %s ran units", w.name)
		w.stop()
		require.NoError(t, w.err, "worker %s", w.name)
		got.WriteString(w.out.String())
		t.Logf("worker %s: %d bytes of output, units %v, transport %+v", w.name, len(w.out.String()),
			w.w.Transport().ActiveUnits(time.Time{}), counts(w.w.Transport().Stats()))
	}
	require.Equal(t, sortedLines(want), sortedLines(got.String()))
	for _, w := range workers {
		if out := w.out.String(); out != "" {
			require.Equal(t, want, out, "one worker ran the sink: the same bytes in the same order")
		}
	}
}

func counts(s *jetstreamedge.Stats) map[string]uint64 {
	return map[string]uint64{
		"published": s.Published.Load(), "particles": s.PublishedParticles.Load(), "bytes": s.PublishedBytes.Load(),
		"received": s.Received.Load(), "redelivered": s.Redelivered.Load(), "duplicates": s.Duplicates.Load(),
		"publish_failed": s.PublishFailed.Load(), "held_back": s.HeldBack.Load(), "gaps_skipped": s.GapsSkipped.Load(),
	}
}

// The instances of a bolt fed on forward edges are chained to their
// upstream instances: no unit of their own, in the transport's list or
// in the cluster's status, and the edges into them never cross JetStream:
// only dedup's and out's instances receive messages. The output is the
// single-process output.
func TestChainedInstancesAreNoUnits(t *testing.T) {
	want := singleProcess(t, threeStages)
	c := natstestCluster(t)
	name := fmt.Sprintf("chain-%d", time.Now().UnixNano())
	w := startWorker(t, c, threeStages, name, "w1")
	w.run()
	select {
	case <-w.ran:
	case <-time.After(90 * time.Second):
		t.Fatalf("the worker did not finish the run: transport %+v", counts(w.w.Transport().Stats()))
	}
	heads := []string{"dedup_0", "dedup_1", "out_0"}
	require.ElementsMatch(t, heads, w.w.Transport().Units())
	require.Equal(t, heads, w.w.Transport().ActiveUnits(time.Time{}))
	st := status(t, w.nc, name)
	var inStatus []string
	for _, u := range st.Units {
		inStatus = append(inStatus, u.Consumer)
	}
	require.ElementsMatch(t, heads, inStatus, "the status lists the chain heads alone")
	require.Equal(t, uint64(2), w.built.Stats("stats10m").Ended.Load(), "both chained instances ended")
	w.stop()
	require.NoError(t, w.err)
	require.Equal(t, want, w.out.String())
}
