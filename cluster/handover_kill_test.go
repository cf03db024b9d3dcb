package cluster_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
)

// SIGKILL during a hand-over: worker w1 runs the whole pipeline alone, w2
// joins, and as soon as w1 handed its first unit over (the others still
// to come), the worker taking units is killed and started again under a
// new name. The files the sinks wrote hold the single-process output, no
// line missing; a line beyond it can only be a copy that a killed sink
// wrote and had not acknowledged.
//
// Killing the giver, w1, which also holds the source's lease (a running
// replay is not handed over), is not here: it still loses a window's
// inputs now and then on a loaded machine (docs/scale-out.md).
func TestKilledDuringHandOver(t *testing.T) {
	want := lines(readFile(t, filepath.Join(roomsOutput(t), "out.lp")))
	c := natstestCluster(t)
	dir := t.TempDir()
	// Slower than the file's 400, so that the hand-over comes well before
	// the recording's end on a loaded machine.
	file := roomsPipeline(t, dir, "100")
	name := fmt.Sprintf("handover-%d", time.Now().UnixNano())
	nc, err := nats.Connect(c.URL())
	require.NoError(t, err)
	defer nc.Close()
	giver := startProcessWith(t, c.URL(), file, name, "w1", time.Second)
	require.Eventually(t, func() bool { _, ok := entry(nc, name, "leases", "source.wsn.0"); return ok },
		60*time.Second, 20*time.Millisecond, "w1 takes the source's lease")
	taker := startProcessWith(t, c.URL(), file, name, "w2", time.Second)
	require.Eventually(t, func() bool { return strings.Contains(giver.errs.String(), `msg="unit handed over"`) },
		60*time.Second, 2*time.Millisecond, "w1 hands a unit over to w2")
	require.NoError(t, taker.cmd.Process.Signal(syscall.SIGKILL))
	<-taker.done
	t.Logf("killed w2 after w1 handed %d units over", strings.Count(giver.errs.String(), `msg="unit handed over"`))
	for _, p := range []*process{giver, startProcessWith(t, c.URL(), file, name, "w3", time.Second)} {
		select {
		case <-p.done:
			require.NoError(t, p.err, "worker %s: %s", p.name, p.errs.String())
		case <-time.After(150 * time.Second):
			t.Fatalf("worker %s did not finish: %s", p.name, p.errs.String())
		}
	}
	requireNoneLost(t, want, workerFiles(t, dir))
}
