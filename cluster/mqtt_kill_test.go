package cluster_test

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/jetstreamedge"
)

// SIGKILL of the worker holding an MQTT sink's unit while its messages
// come out, started again under a new name: the worker that takes the
// unit restores its checkpoint, reads the mark of what the killed one
// published, and publishes the rest: the broker gets one process's
// messages, each once. (The sink publishes what a checkpoint holds once
// it completes; with at_least_once it published again what came after
// the checkpoint.)
func TestKilledWorkerMQTTOnce(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	sub := broker.Subscribe(t, "rooms", "rooms/#")
	single := func() []string { return sub.Payloads("rooms/single") }
	singleProcess(t, roomsWithSink(t, t.TempDir(), "max", fmt.Sprintf("sink: {mqtt: {broker: %s, topic: rooms/single}}", broker.URL())))
	require.Eventually(t, func() bool { return len(single()) == 21 }, 10*time.Second, 10*time.Millisecond)
	want := single()
	slices.Sort(want)

	c := natstestCluster(t)
	got := func() []string { return sub.Payloads("rooms/cluster") }
	file := roomsWithSink(t, t.TempDir(), "100", fmt.Sprintf("sink: {mqtt: {broker: %s, topic: rooms/cluster}}", broker.URL()))
	name := fmt.Sprintf("mqttkill-%d", time.Now().UnixNano())
	nc, procs := startTwo(t, c.URL(), file, name)
	var killed string
	require.Eventually(t, func() bool {
		if len(got()) < 3 {
			return false
		}
		for _, w := range status(t, nc, name).Workers {
			if slices.Contains(w.Units, jetstreamedge.ConsumerName("out", 0)) {
				killed = w.Worker
			}
		}
		return killed != ""
	}, 60*time.Second, 5*time.Millisecond, "time to kill")
	i := slices.IndexFunc(procs, func(p *process) bool { return p.name == killed })
	require.NotEqual(t, -1, i, "worker %q is one of the test's", killed)
	at := len(got())
	require.NoError(t, procs[i].cmd.Process.Signal(syscall.SIGKILL))
	<-procs[i].done
	t.Logf("killed %s with %d messages out", killed, at)
	procs[i] = startProcess(t, c.URL(), file, name, "w3")
	awaitProcesses(t, 180*time.Second, procs...)
	require.Eventually(t, func() bool { return len(got()) >= len(want) }, 30*time.Second, 10*time.Millisecond)
	msgs := got()
	slices.Sort(msgs)
	require.Equal(t, want, msgs, "each message once")
}
