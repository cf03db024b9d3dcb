package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/internal/pgtest"
	"github.com/sensorstorm/sensorstorm/internal/proctest"
)

// TestRunCheckpointedWindows counts ten-minute and one-hour windows of a
// live MQTT feed (spool mode) whose windows each hold at least twelve
// times max_pending readings, once without a crash and once
// killed with SIGKILL in the middle of a window and started again: every
// window comes out once, with the count an independent reference gives,
// and nothing is dead-lettered or dropped. The inputs are acknowledged by
// checkpoints, not when their windows fire, and the file is cut back to
// the last checkpoint at the restart.
func TestRunCheckpointedWindows(t *testing.T) {
	for _, size := range []time.Duration{10 * time.Minute, time.Hour} {
		for _, kill := range []bool{false, true} {
			t.Run(fmt.Sprintf("size=%v/kill=%v", size, kill), func(t *testing.T) { checkpointedWindows(t, size, kill) })
		}
	}
}

func checkpointedWindows(t *testing.T, size time.Duration, kill bool) {
	const (
		sensors    = 12
		n          = 36_000 // 30 minutes of readings, one every 50 ms
		maxPending = 1000
	)
	bin := buildBinary(t)
	// The broker queues what the feed sends faster than a starved CPU
	// takes it (a stock Mosquitto drops past 1000 messages, which at
	// 10,000 a second on a loaded machine it did): this test is of
	// checkpoints; TestTableLockDuringMQTTFeed keeps stock limits.
	broker := mosquittotest.Start(t, mosquittotest.Config{MaxQueued: n})
	dir := t.TempDir()
	out := filepath.Join(dir, "out.lp")
	file := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, `
sources:
  - name: sensors
    mqtt:
      broker: %s
      topics: [sensors/#]
      client_id: checkpointed-kill
      state_dir: state
      payload: {topic_tags: "sensors/{sensor}"}
acking: {max_pending: %d}
checkpoints: {dir: checkpoints, interval: 200ms}
bolts:
  - name: count
    input: {from: sensors, grouping: fields, fields: [sensor]}
    window: 1s
    op: {type: window-count, size: %v, by: [sensor]}
  - name: out
    input: {from: count, grouping: global}
    sink: {file: out.lp}
`, broker.URL(), maxPending, size), 0o644))
	start := func() (*exec.Cmd, *mosquittotest.LockedBuffer) { return startRun(t, bin, file, out) }
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("checkpointed-kill-pub"))
	require.True(t, pub.Connect().WaitTimeout(10*time.Second))
	defer pub.Disconnect(100)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	reading := func(i int) int64 { return t0 + int64(i)*int64(50*time.Millisecond) }
	publish := func(from, to int) {
		var last paho.Token
		for i := from; i < to; i++ {
			if i%100 == 0 {
				time.Sleep(10 * time.Millisecond) // about 10,000 readings a second
			}
			last = pub.Publish(fmt.Sprintf("sensors/s%d", i%sensors), 1, false, fmt.Sprintf("reading v=%di %d", i, reading(i)))
		}
		require.True(t, last.WaitTimeout(30*time.Second))
		require.NoError(t, last.Error())
	}

	first, stderr := start()
	waitUntil(t, 20*time.Second, "subscribed", func() bool { return strings.Contains(stderr.String(), "connected") })
	second, next := first, 0
	if kill {
		// Killed a quarter into the second ten minutes, after
		// checkpoints.
		next = n/2 - n/12
		publish(0, next)
		waitUntil(t, 20*time.Second, "a checkpoint", func() bool {
			m, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "*", "MANIFEST")) // not its temporary file
			return len(m) > 0
		})
		require.NoError(t, first.Process.Signal(syscall.SIGKILL))
		_ = first.Wait()
		second, stderr = start()
	}
	publish(next, n)
	// A reading past the last window closes it.
	end := (reading(n-1)/int64(size) + 1) * int64(size)
	tok := pub.Publish("sensors/s0", 1, false, fmt.Sprintf("reading v=-1i %d", end+int64(time.Minute)))
	require.True(t, tok.WaitTimeout(10*time.Second))
	windows := int(time.Duration(end-t0) / size)
	want := windows * sensors
	waitUntil(t, 90*time.Second, "every window in the output", func() bool { return len(windowCounts(t, out)) >= want })
	require.NoError(t, second.Process.Signal(syscall.SIGTERM))
	require.NoError(t, second.Wait(), "exit status after SIGTERM: %s", stderr.String())
	if kill {
		assert.Contains(t, stderr.String(), "restored checkpoint")
	}

	counts := windowCounts(t, out)
	lines := strings.Count(readFile(t, out), "\n")
	assert.Equal(t, want, lines, "one line per window, none twice: %s", readFile(t, out))
	for w := range windows {
		for s := range sensors {
			key := fmt.Sprintf("s%d@%d", s, t0+int64(w+1)*int64(size))
			assert.Equal(t, n/windows/sensors, counts[key], "window %s", key)
		}
	}
	assert.NotContains(t, stderr.String(), "dead letter", "nothing dead-lettered")
	assert.NotContains(t, broker.Log(), "dropped", "the broker dropped messages")
}

// startRun starts `sensorstorm run` on the pipeline file, killed at the
// end of the test, which logs its last lines and the output file out if
// it failed.
func startRun(t *testing.T, bin, file, out string) (*exec.Cmd, *mosquittotest.LockedBuffer) {
	cmd := exec.Command(bin, "run", "--log-level", "info", file)
	stderr := &mosquittotest.LockedBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("run's log:\n%s\noutput:\n%s", lastLines(stderr.String(), 30), readFile(t, out))
		}
	})
	return cmd, stderr
}

// windowCounts reads a window-count sink's file: the count of each
// sensor's window, by "sensor@end".
func windowCounts(t *testing.T, path string) map[string]int {
	t.Helper()
	re := regexp.MustCompile(`(?m)^\S*sensor=(s\d+)\S* \S*count=(\d+)i?\S* (\d+)$`)
	counts := map[string]int{}
	for _, m := range re.FindAllStringSubmatch(readFile(t, path), -1) {
		c, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		counts[m[1]+"@"+m[3]] += c
	}
	return counts
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestRunCheckpointedRecordingKilled replays the shipped recording through
// three stages with state (resampling per mote, alignment of the motes,
// ten-minute means) into a file, a PostgreSQL table and an MQTT broker,
// kills the process with SIGKILL at random moments and starts it again
// each time: the file holds the bytes, the table the rows and the broker
// got the messages of a run never killed, each once.
func TestRunCheckpointedRecordingKilled(t *testing.T) {
	ctx := context.Background()
	const schema = "test_run_checkpointed_kill"
	conn := pgtest.Schema(t, schema)
	bin := buildBinary(t)
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	messages := broker.Subscribe(t, "results", "results/#")
	recording, err := filepath.Abs("../../testdata/library1-r1.lp")
	require.NoError(t, err)
	pipelineFile := func(dir, table, checkpoints string) string {
		file := filepath.Join(dir, "p.yaml")
		require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, `
sources:
  - name: wsn
    file: {paths: [%q], speed: 4000}
%s
bolts:
  - name: resample
    input: {from: wsn, grouping: fields, fields: [node]}
    parallelism: 2
    window: 5s
    op: {type: resample, every: 1m, fields: [temperature], by: [node], method: linear, max_gap: 5m}
  - name: align
    input: {from: resample, grouping: global}
    window: 5m
    op: {type: align, bucket: 1m, sensor: [node], fields: [temperature], measurement: library1}
  - name: mean
    input: {from: align, grouping: global}
    op: {type: window-mean, size: 10m}
  - name: out
    input: {from: mean, grouping: global}
    sink: {file: out.lp}
  - name: table
    input: {from: mean, grouping: global}
    sink:
      postgres: {url: %q, table: %s.%s}
  - name: broker
    input: {from: mean, grouping: global}
    sink:
      mqtt: {broker: %[6]s, topic: results/%[5]s}
`, recording, checkpoints, pgtest.URL(), schema, table, broker.URL()), 0o644))
		return file
	}
	rows := func(table string) string {
		var s string
		require.NoError(t, conn.QueryRow(ctx, fmt.Sprintf(
			`SELECT string_agg((to_jsonb(r) - 'epoch')::text, E'\n' ORDER BY (to_jsonb(r) - 'epoch')::text) FROM %s.%s r`, schema, table)).Scan(&s))
		return s
	}

	whole := t.TempDir()
	cmd := exec.Command(bin, "run", pipelineFile(whole, "whole", ""))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	want, wantRows := readFile(t, filepath.Join(whole, "out.lp")), rows("whole")
	require.NotEmpty(t, want)
	wantMessages := strings.Count(want, "\n")
	require.Eventually(t, func() bool { return len(messages.Payloads("results/whole")) == wantMessages }, 10*time.Second, 10*time.Millisecond,
		"%d of %d messages", len(messages.Payloads("results/whole")), wantMessages)

	killed := t.TempDir()
	file := pipelineFile(killed, "killed", "checkpoints: {dir: checkpoints, interval: 100ms}")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	kills, restores := 0, 0
	for {
		cmd := exec.Command(bin, "run", file)
		stderr := &mosquittotest.LockedBuffer{}
		cmd.Stderr = stderr
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		restored := func() {
			if strings.Contains(stderr.String(), "restored checkpoint") {
				restores++
			}
		}
		if kills < 3 {
			select {
			case err := <-done:
				require.NoError(t, err, "%s", stderr.String())
			case <-time.After(time.Duration(300+rng.IntN(2000)) * time.Millisecond):
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
				<-done
				restored()
				kills++
				continue
			}
		} else {
			require.NoError(t, <-done, "%s", stderr.String())
		}
		restored()
		break
	}
	t.Logf("killed %d times (seed %d), %d runs restored a checkpoint", kills, seed, restores)
	require.Positive(t, restores, "a restarted run restored a checkpoint")
	assert.Equal(t, want, readFile(t, filepath.Join(killed, "out.lp")), "the file")
	assert.Equal(t, wantRows, rows("killed"), "the table's rows")
	// The restored runs publish what the checkpoints committed and the
	// broker does not have yet.
	require.Eventually(t, func() bool { return len(messages.Payloads("results/killed")) >= wantMessages }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, messages.Payloads("results/whole"), messages.Payloads("results/killed"), "the messages, each once, in order")
}

// TestRunCheckpointedHTTPWrites counts ten-minute windows of readings
// written to the InfluxDB write endpoint, the process killed with SIGKILL
// in the middle of a window, after checkpoints, and started again: every
// window comes out once with every reading answered 204 counted once. The
// bodies leave the spool at checkpoints, and the restored run resumes
// after the checkpoint's body and particle.
func TestRunCheckpointedHTTPWrites(t *testing.T) {
	const (
		sensors = 6
		n       = 12_000 // 30 minutes of readings, one every 150 ms
		perBody = 100
		size    = 10 * time.Minute
	)
	bin := buildBinary(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.lp")
	file := filepath.Join(dir, "p.yaml")
	addr := fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t))
	require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, `
sources:
  - name: writes
    http: {addr: "%s", state_dir: state}
acking: {max_pending: 500}
checkpoints: {dir: checkpoints, interval: 200ms}
bolts:
  - name: count
    input: {from: writes, grouping: fields, fields: [sensor]}
    window: 1s
    op: {type: window-count, size: %v, by: [sensor]}
  - name: out
    input: {from: count, grouping: global}
    sink: {file: out.lp}
`, addr, size), 0o644))
	start := func() (*exec.Cmd, *mosquittotest.LockedBuffer) {
		cmd, stderr := startRun(t, bin, file, out)
		waitUntil(t, 20*time.Second, "listening", func() bool { return strings.Contains(stderr.String(), "listening") })
		return cmd, stderr
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	reading := func(i int) int64 { return t0 + int64(i)*int64(150*time.Millisecond) }
	write := func(body string) {
		resp, err := http.Post("http://"+addr+"/api/v2/write?bucket=b&precision=ns", "text/plain", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
	}
	writeReadings := func(from, to int) {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "reading,sensor=s%d v=%di %d\n", i%sensors, i, reading(i))
			if (i+1)%perBody == 0 || i == to-1 {
				write(b.String())
				b.Reset()
			}
		}
	}

	first, stderr := start()
	next := n/2 - n/12 // a quarter into the second window
	writeReadings(0, next)
	waitUntil(t, 20*time.Second, "a checkpoint", func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "*", "MANIFEST")) // not its temporary file
		return len(m) > 0
	})
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	second, stderr := start()
	writeReadings(next, n)
	end := (reading(n-1)/int64(size) + 1) * int64(size)
	write(fmt.Sprintf("reading,sensor=s0 v=-1i %d\n", end+int64(time.Minute)))
	windows := int(time.Duration(end-t0) / size)
	want := windows * sensors
	waitUntil(t, 90*time.Second, "every window in the output", func() bool { return len(windowCounts(t, out)) >= want })
	require.NoError(t, second.Process.Signal(syscall.SIGTERM))
	require.NoError(t, second.Wait(), "exit status after SIGTERM: %s", stderr.String())
	assert.Contains(t, stderr.String(), "restored checkpoint")

	reference := map[string]int{}
	for i := range n {
		reference[fmt.Sprintf("s%d@%d", i%sensors, (reading(i)/int64(size)+1)*int64(size))]++
	}
	assert.Equal(t, want, strings.Count(readFile(t, out), "\n"), "one line per window, none twice: %s", readFile(t, out))
	assert.Equal(t, reference, windowCounts(t, out))
	assert.NotContains(t, stderr.String(), "dead letter", "nothing dead-lettered")
}
