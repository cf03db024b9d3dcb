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
// to come), one of them is killed and started again: the taker, w2, under
// a new name, or the giver, w1, which also holds the source's lease (a
// running replay is not handed over), under its own name or a new one.
// Units restore their checkpoints wherever they start, and a file sink
// that moves continues the file its checkpoint recorded: the files the
// sinks wrote hold the single-process output, each line once.
func TestKilledDuringHandOver(t *testing.T) {
	want := lines(readFile(t, filepath.Join(roomsOutput(t), "out.lp")))
	c := natstestCluster(t)
	for _, tc := range []struct {
		name        string
		killGiver   bool
		restartedAs string
	}{
		{name: "taker, new name", restartedAs: "w3"},
		{name: "giver, same name", killGiver: true, restartedAs: "w1"},
		{name: "giver, new name", killGiver: true, restartedAs: "w3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// Slower than the file's 400, so that the hand-over comes well
			// before the recording's end on a loaded machine.
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
			killed, survivor := taker, giver
			if tc.killGiver {
				killed, survivor = giver, taker
			}
			require.NoError(t, killed.cmd.Process.Signal(syscall.SIGKILL))
			<-killed.done
			t.Logf("killed %s after w1 handed %d units over", killed.name, strings.Count(giver.errs.String(), `msg="unit handed over"`))
			awaitProcesses(t, 300*time.Second, survivor, startProcessWith(t, c.URL(), file, name, tc.restartedAs, time.Second))
			requireSameLines(t, want, workerFiles(t, dir))
		})
	}
}
