package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
)

// stalledOut makes a named pipe for ingest's --out that nobody reads
// until drain is called: once the pipe's buffer is full, the file sink
// blocks in write, a destination that does not answer. drain copies what
// comes through to a regular file, whose path it returns.
func stalledOut(t *testing.T, dir string) (fifo string, drain func() string) {
	t.Helper()
	fifo = filepath.Join(dir, "out.fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	// Read and write: the pipe lives across the writers, and a read never
	// sees its end.
	r, err := os.OpenFile(fifo, os.O_RDWR, 0)
	require.NoError(t, err)
	copied := make(chan struct{})
	t.Cleanup(func() {
		r.Close()
		<-copied
	})
	drained := filepath.Join(dir, "drained.lp")
	w, err := os.Create(drained)
	require.NoError(t, err)
	return fifo, func() string {
		go func() {
			defer close(copied)
			defer w.Close()
			_, _ = io.Copy(w, r) // ends when the test closes r
		}()
		return drained
	}
}

// TestIngestKillDuringStall feeds ingest (spool mode, stock Mosquitto)
// while its output does not move, kills it with SIGKILL once the backlog
// spilled to disk, and restarts it: the output moves again and every
// reading arrives, duplicates counted, none lost, and the broker drops
// nothing.
func TestIngestKillDuringStall(t *testing.T) {
	const n = 20_000
	bin := buildBinary(t)
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	dir := t.TempDir()
	fifo, drain := stalledOut(t, dir)
	args := []string{"--broker", broker.URL(), "--topic", "sensors/#", "--client-id", "stall-kill",
		"--state-dir", filepath.Join(dir, "state"), "--out", fifo, "--window", "100ms", "--topic-tags", "sensors/{sensor}"}
	first, stderr := startIngest(t, bin, args...)

	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("stall-kill-pub"))
	require.True(t, pub.Connect().WaitTimeout(10*time.Second))
	defer pub.Disconnect(100)
	base := time.Now().UnixNano()
	publish := func(from, to int) {
		var last paho.Token
		for i := from; i < to; i++ {
			// A live feed of 2,500 readings a second.
			if i%25 == 0 {
				time.Sleep(10 * time.Millisecond)
			}
			last = pub.Publish(fmt.Sprintf("sensors/s%d", i%4), 1, false, fmt.Sprintf("reading n=%di %d", i, base+int64(i)*int64(time.Millisecond)))
		}
		require.True(t, last.WaitTimeout(20*time.Second))
		require.NoError(t, last.Error())
	}
	publish(0, n/2)
	waitUntil(t, 20*time.Second, "the backlog on disk", func() bool { return strings.Contains(stderr.String(), "backlog growing") })
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()

	second, stderr := startIngest(t, bin, args...)
	assert.Contains(t, stderr.String(), "a backlog left by the previous run is processed first")
	out := drain()
	publish(n/2, n)
	// A reading past the window releases the last ones.
	tok := pub.Publish("sensors/s0", 1, false, fmt.Sprintf("reading n=-1i %d", base+int64(n+1000)*int64(time.Millisecond)))
	require.True(t, tok.WaitTimeout(10*time.Second))
	waitUntil(t, 90*time.Second, "every reading in the output", noDrops(t, broker, func() bool { return len(readOutput(t, out)) >= n }))
	require.NoError(t, second.Process.Signal(syscall.SIGTERM))
	require.NoError(t, second.Wait(), "exit status after SIGTERM: %s", stderr.String())

	seen := readOutput(t, out)
	dups := 0
	for i := range n {
		require.Positive(t, seen[i], "reading %d lost", i)
		dups += seen[i] - 1
	}
	assert.Regexp(t, `(?m)^ingest: messages=\d+ written=\d+ recovered=[1-9]`, stderr.String(), "the second run drained the first one's backlog")
	t.Logf("%d readings, %d duplicates after the restart; second run: %s", n, dups, regexp.MustCompile(`(?m)^ingest: .*$`).FindString(stderr.String()))
	assert.NotContains(t, broker.Log(), "dropped", "the broker dropped messages")
}
