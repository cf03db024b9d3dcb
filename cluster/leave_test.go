package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/cluster"
)

// A worker that leaves hands its units over at once, not after the
// rebalance delay: the first worker runs every unit and keeps them when
// the second joins (a rebalance delay of an hour), then leaves: it no
// longer holds any, the second is assigned them all, and the first is no
// longer announced. Its replay of the recording is not handed over: the
// second resumes it once the lease expired, and the output is the
// single-process output. The last worker has nobody to hand over to.
func TestLeavingWorkerHandsItsUnitsOver(t *testing.T) {
	want := singleProcess(t, threeStages)
	c := natstestCluster(t)
	name := fmt.Sprintf("leave-%d", time.Now().UnixNano())
	const paced = "testdata/library1-mean-paced.yaml"
	config := func(worker string) cluster.Config {
		cfg := testConfig(name, worker)
		cfg.RebalanceDelay = time.Hour
		return cfg
	}
	first := startWorkerWith(t, c, paced, config("w1"))
	first.run()
	defer first.stop()
	// dedup's instances, each with its chained stats10m instance, and out.
	const n = 3
	require.Eventually(t, func() bool { return len(first.w.Transport().HeldUnits()) == n },
		30*time.Second, 20*time.Millisecond, "the first worker alone runs every unit")
	second := startWorkerWith(t, c, paced, config("w2"))
	second.run()
	defer second.stop()
	require.Eventually(t, func() bool { return len(first.w.Workers()) == 2 }, 10*time.Second, 20*time.Millisecond, "the first worker sees the second")
	require.Len(t, first.w.Transport().HeldUnits(), n, "the first worker keeps its units for the rebalance delay")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, first.w.Leave(ctx))
	t.Logf("the first worker left in %s", time.Since(start).Round(time.Millisecond))
	require.Empty(t, first.w.Transport().HeldUnits())
	require.Eventually(t, func() bool { return len(second.w.Assigned()) == n }, 10*time.Second, 20*time.Millisecond,
		"the second worker is assigned every unit")
	st := status(t, second.nc, name)
	require.Len(t, st.Workers, 1)
	require.Equal(t, "w2", st.Workers[0].Worker, "the first worker withdrew its announcement")
	first.stop()
	require.NoError(t, first.err)

	select {
	case <-second.ran:
	case <-time.After(90 * time.Second):
		t.Fatal("the second worker did not finish the run")
	}
	// A context of its own: waiting for the run may outlast the first's.
	alone, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	require.ErrorIs(t, second.w.Leave(alone), cluster.ErrAlone)
	second.stop()
	require.NoError(t, second.err)
	requireNoneLost(t, lines(want), append(lines(first.out.String()), lines(second.out.String())...))
}
