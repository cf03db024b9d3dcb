package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
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
)

// buildBinary builds sensorstorm into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sensorstorm")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

func startIngest(t *testing.T, bin string, args ...string) (*exec.Cmd, *mosquittotest.LockedBuffer) {
	t.Helper()
	return startIngestUntil(t, bin, "mqtt: connected", args...)
}

// startIngestUntil starts ingest and waits until its log says ready.
func startIngestUntil(t *testing.T, bin, ready string, args ...string) (*exec.Cmd, *mosquittotest.LockedBuffer) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"ingest"}, args...)...)
	stderr := &mosquittotest.LockedBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitUntil(t, 20*time.Second, "ingest to log "+ready, func() bool { return strings.Contains(stderr.String(), ready) })
	return cmd, stderr
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noDrops wraps cond, which waits for readings a broker delivers, to fail
// the test at once with the broker's own words when it dropped messages
// for a client that fell behind (a stock Mosquitto queues 1000), rather
// than time out waiting for them.
func noDrops(t *testing.T, broker *mosquittotest.Broker, cond func() bool) func() bool {
	return func() bool {
		if log := broker.Log(); strings.Contains(log, "dropped") {
			t.Fatalf("the broker dropped messages: the machine did not take the feed as fast as it came:\n%s", log)
		}
		return cond()
	}
}

var readingNumber = regexp.MustCompile(`\bn=(\d+)i`)

// readOutput counts the readings in the output file by number.
func readOutput(t *testing.T, path string) map[int]int {
	t.Helper()
	seen := map[int]int{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return seen
	}
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := readingNumber.FindSubmatch(sc.Bytes()); m != nil {
			n, _ := strconv.Atoi(string(m[1]))
			seen[n]++
		}
	}
	return seen
}

// TestIngestCrash kills the ingest process with SIGKILL mid-stream and
// restarts it with the same client id and state directory: every message
// is in the output at least once. The broker's queue is raised so that
// what is published while the process is down is not dropped by the
// broker, which is not what this test is about.
func TestIngestCrash(t *testing.T) {
	const n = 8000
	bin := buildBinary(t)
	broker := mosquittotest.Start(t, mosquittotest.Config{MaxQueued: 100_000})
	dir := t.TempDir()
	out := filepath.Join(dir, "out.lp")
	args := []string{"--broker", broker.URL(), "--topic", "sensors/#", "--client-id", "crash",
		"--state-dir", filepath.Join(dir, "state"), "--out", out, "--append", "--window", "100ms", "--topic-tags", "sensors/{sensor}"}
	first, _ := startIngest(t, bin, args...)

	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("crash-pub"))
	require.True(t, pub.Connect().WaitTimeout(10*time.Second))
	defer pub.Disconnect(100)
	published := make(chan error, 1)
	go func() {
		base := time.Now().UnixNano()
		for i := range n {
			pub.Publish(fmt.Sprintf("sensors/s%d", i%4), 1, false, fmt.Sprintf("reading n=%di %d", i, base+int64(i)*int64(time.Millisecond)))
			if i%100 == 0 {
				time.Sleep(5 * time.Millisecond)
			}
		}
		// A reading past the window releases the last ones, which would
		// otherwise wait for newer data (or the drain) in the buffer.
		last := pub.Publish("sensors/s0", 1, false, fmt.Sprintf("reading n=-1i %d", base+int64(n+1000)*int64(time.Millisecond)))
		last.Wait()
		published <- last.Error()
	}()

	waitUntil(t, 30*time.Second, "output mid-stream", func() bool { return len(readOutput(t, out)) >= n/4 })
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	killedAt := len(readOutput(t, out))

	second, stderr := startIngest(t, bin, args...)
	require.NoError(t, <-published)
	waitUntil(t, 60*time.Second, "every message in the output", func() bool { return len(readOutput(t, out)) >= n })
	require.NoError(t, second.Process.Signal(syscall.SIGTERM))
	require.NoError(t, second.Wait(), "exit status after SIGTERM: %s", stderr.String())
	assert.Regexp(t, `(?m)^ingest: messages=\d+ written=\d+ `, stderr.String())
	parseSummary(t, stderr.String())

	seen := readOutput(t, out)
	dups := 0
	for i := range n {
		require.Positive(t, seen[i], "reading %d lost", i)
		dups += seen[i] - 1
	}
	t.Logf("killed with %d readings out; %d readings, %d duplicates after the restart", killedAt, n, dups)
	t.Logf("second run: %s", regexp.MustCompile(`(?m)^summary:.*$`).FindString(stderr.String()))
}

func TestIngestUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitUsage, run(t.Context(), []string{"ingest", "--topic", "a"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "missing required flag --broker")
	assert.Equal(t, exitUsage, run(t.Context(), []string{"ingest", "--broker", "tcp://x:1", "--topic", "a", "--mode", "bogus"}, &stdout, &stderr))
	assert.Equal(t, exitUsage, run(t.Context(), []string{"bench"}, &stdout, &stderr))
}

// TestIngestConnectErrors runs ingest against a broker that refuses its
// password, and against a port nothing listens on: the first exits at
// once with the broker's reason; the second logs every attempt, and when
// interrupted exits non-zero, having never connected.
func TestIngestConnectErrors(t *testing.T) {
	users := mosquittotest.Start(t, mosquittotest.Config{Users: map[string]string{"alice": "secret"}})
	down := mosquittotest.Start(t, mosquittotest.Config{})
	down.Stop()
	for _, tc := range []struct {
		name, broker, password string
		want                   []string
	}{
		{name: "wrong password", broker: users.URL(), password: "wrong",
			want: []string{`mqtt: connection refused, not retrying`, `sensorstorm: source mqtt[0]: mqtt: connecting to ` + users.URL() + ` as "ingest-refused": not Authorized`}},
		{name: "broker down", broker: down.URL(),
			want: []string{`msg="mqtt: connection attempt failed"`, `connection refused`, `sensorstorm: never connected to ` + down.URL()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			stderr := &mosquittotest.LockedBuffer{}
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, []string{"ingest", "--broker", tc.broker, "--topic", "sensors/#", "--client-id", "ingest-refused",
					"--username", "alice", "--password", tc.password, "--state-dir", filepath.Join(dir, "state"), "--out", filepath.Join(dir, "out.lp")},
					io.Discard, stderr)
			}()
			waitUntil(t, 20*time.Second, "a failed attempt logged", func() bool { return strings.Contains(stderr.String(), tc.want[0]) })
			cancel()
			select {
			case code := <-done:
				assert.Equal(t, exitError, code, stderr.String())
			case <-time.After(20 * time.Second):
				t.Fatal("ingest did not stop")
			}
			for _, w := range tc.want {
				assert.Contains(t, stderr.String(), w)
			}
		})
	}
}

// TestIngestBadTopics runs ingest with topic tags and a publish template.
// A message whose topic does not match the topic tags is dead-lettered
// once with its topic and reason and acknowledged, never written (it was
// written three times: the publish sink failed it for lack of a tag, and
// every retry wrote it again). A tag value with a slash fills one level of
// the published topic.
func TestIngestBadTopics(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	got := make(chan string, 100)
	sub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("bad-topics-sub").
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) { got <- m.Topic() }))
	require.True(t, sub.Connect().WaitTimeout(10*time.Second))
	defer sub.Disconnect(100)
	require.True(t, sub.Subscribe("results/#", 1, nil).WaitTimeout(10*time.Second))

	dir := t.TempDir()
	out := filepath.Join(dir, "out.lp")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &mosquittotest.LockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"ingest", "--broker", broker.URL(), "--topic", "sensors/#", "--client-id", "bad-topics",
			"--topic-tags", "sensors/{room}/{sensor}", "--publish", "results/{sensor}", "--window", "100ms",
			"--state-dir", filepath.Join(dir, "state"), "--out", out, "--append"}, io.Discard, stderr)
	}()
	waitUntil(t, 20*time.Second, "ingest connected", func() bool { return strings.Contains(stderr.String(), "mqtt: connected") })

	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("bad-topics-publisher"))
	require.True(t, pub.Connect().WaitTimeout(10*time.Second))
	defer pub.Disconnect(100)
	base := time.Now().UnixNano()
	for i, m := range [][2]string{
		{"sensors/a", "m n=1i %d"},
		{"sensors/r/in", "m,sensor=in/x n=2i %d"},
		{"sensors/r/s1", "m n=3i %d"},
	} {
		require.True(t, pub.Publish(m[0], 1, false, fmt.Sprintf(m[1], base+int64(i)*int64(time.Millisecond))).WaitTimeout(10*time.Second))
	}
	// Past the window: releases the readings before it.
	require.True(t, pub.Publish("sensors/r/s1", 1, false, fmt.Sprintf("m n=4i %d", base+int64(time.Second))).WaitTimeout(10*time.Second))
	topics := map[string]bool{}
	waitUntil(t, 20*time.Second, "results published", func() bool {
		for {
			select {
			case topic := <-got:
				topics[topic] = true
			default:
				return topics["results/in%2Fx"] && topics["results/s1"]
			}
		}
	})
	cancel()
	assert.Equal(t, exitOK, <-done, stderr.String())

	assert.NotContains(t, topics, "results/in/x")
	assert.Equal(t, map[int]int{2: 1, 3: 1, 4: 1}, readOutput(t, out))
	log := stderr.String()
	assert.Equal(t, 1, strings.Count(log, "dead letter"), log)
	assert.Regexp(t, `dead letter.*sensors/a:1: mqtt: topic does not match the topic template \\"sensors/\{room\}/\{sensor\}\\"`, log)
	assert.Regexp(t, `ingest: messages=4 written=3 .*acked=4 failed=0 reconnects=0 backlog=0 backlog_bytes=0 elapsed=`, log)
	assert.NotContains(t, log, "kept in the spool", "nothing waits")
	assert.Regexp(t, `summary: read=4 emitted=3 .*invalid=1 `, log)
	assert.NotContains(t, log, "connection lost")
}
