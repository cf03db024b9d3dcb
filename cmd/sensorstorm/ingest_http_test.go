package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/influxdata/influxdb-client-go/v2/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
)

// freeAddr returns a loopback address with a port free at the time.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// influxWriter writes readings n=0..N-1, reading i at base + i ms, with
// InfluxDB's Go client: batching, gzip, and retries that never give up
// within a test, with a retry buffer that holds every point.
type influxWriter struct {
	api  api.WriteAPI
	base time.Time
	n    int
	done chan struct{} // closed once every reading was handed to the client
}

// startInfluxWriter starts writing n readings to addr, a few thousand a
// second.
func startInfluxWriter(t *testing.T, addr string, n int) *influxWriter {
	opts := influxdb2.DefaultOptions().SetUseGZip(true).SetBatchSize(200).SetFlushInterval(50).
		SetRetryInterval(100).SetMaxRetryInterval(500).SetMaxRetries(100_000).SetMaxRetryTime(300_000).
		SetRetryBufferLimit(uint(10 * n))
	client := influxdb2.NewClientWithOptions("http://"+addr, "", opts)
	t.Cleanup(client.Close)
	w := &influxWriter{api: client.WriteAPI("org", "bucket"), base: time.Now(), n: n, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := range n {
			w.point(i, w.base.Add(time.Duration(i)*time.Millisecond))
			if i%100 == 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	return w
}

func (w *influxWriter) point(i int, at time.Time) {
	w.api.WritePoint(influxdb2.NewPoint("reading", map[string]string{"sensor": fmt.Sprint("s", i%4)}, map[string]any{"n": i}, at))
}

// finish waits until every reading was handed to the client, then writes
// one past the window (number -1), which releases the last ones from the
// synchronization buffer, where they would wait for newer data or the
// idle timeout.
func (w *influxWriter) finish() {
	<-w.done
	w.point(-1, w.base.Add(time.Duration(w.n+1000)*time.Millisecond))
}

// TestIngestHTTPWriteCrash writes with InfluxDB's Go client (batching,
// gzip, its own retries) to ingest --http-write, kills ingest with
// SIGKILL mid-stream and starts it again on the same address and state:
// the client's retries and the spool make the run lossless, every point
// in the output, found by its content.
func TestIngestHTTPWriteCrash(t *testing.T) {
	const n = 20000
	bin := buildBinary(t)
	dir := t.TempDir()
	out, addr := filepath.Join(dir, "out.lp"), freeAddr(t)
	args := []string{"--http-write", addr, "--state-dir", filepath.Join(dir, "state"), "--out", out, "--append", "--window", "100ms"}
	first, _ := startIngestUntil(t, bin, "httpwrite: listening", args...)

	w := startInfluxWriter(t, addr, n)
	errs := w.api.Errors()
	var clientErrs int
	countErrs := func() {
		for {
			select {
			case <-errs:
				clientErrs++
			default:
				return
			}
		}
	}

	waitUntil(t, 60*time.Second, "output mid-stream", func() bool { countErrs(); return len(readOutput(t, out)) >= n/4 })
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	killedAt := len(readOutput(t, out))

	second, stderr := startIngestUntil(t, bin, "httpwrite: listening", args...)
	w.finish()
	// The client retries when it writes next: flush what it holds.
	waitUntil(t, 60*time.Second, "every point in the output", func() bool {
		countErrs()
		w.api.Flush()
		return len(readOutput(t, out)) >= n
	})
	require.NoError(t, second.Process.Signal(syscall.SIGTERM))
	require.NoError(t, second.Wait(), "exit status after SIGTERM: %s", stderr.String())
	assert.Regexp(t, `(?m)^ingest: http: requests=\d+ accepted=\d+ `, stderr.String())
	assert.Regexp(t, `(?m)^summary: read=\d+ `, stderr.String())

	seen := readOutput(t, out)
	dups := 0
	for i := range n {
		require.Positive(t, seen[i], "point %d lost", i)
		dups += seen[i] - 1
	}
	t.Logf("killed with %d points out; %d points, %d duplicates after the restart; %d write errors the client reported (batches it kept and wrote again)", killedAt, n, dups, clientErrs)
	t.Logf("second run: %s", regexp.MustCompile(`(?m)^ingest: http:.*$`).FindString(stderr.String()))
}

// TestIngestHTTPWrite runs ingest with --http-write alone: a token is
// required, a write is in the output, which replaces an earlier run's
// (with a warning), a bad line is dead-lettered with its position, and
// the usage names what is missing without it.
func TestIngestHTTPWrite(t *testing.T) {
	dir := t.TempDir()
	out, dead, addr := filepath.Join(dir, "out.lp"), filepath.Join(dir, "dead.jsonl"), freeAddr(t)
	require.NoError(t, os.WriteFile(out, []byte("reading n=9i 1\n"), 0o644))
	t.Setenv("SENSORSTORM_HTTP_TOKEN", "secret")
	ctx := t.Context()
	stderr := &mosquittotest.LockedBuffer{}
	code := make(chan int, 1)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		code <- run(runCtx, []string{"ingest", "--http-write", addr, "--state-dir", filepath.Join(dir, "state"),
			"--out", out, "--dead-letter", dead, "--window", "10ms"}, &bytes.Buffer{}, stderr)
	}()
	waitUntil(t, 20*time.Second, "ingest listening", func() bool { return strings.Contains(stderr.String(), "httpwrite: listening") })
	write := func(token string) int {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v2/write?bucket=b&precision=s",
			strings.NewReader(fmt.Sprintf("reading n=1i %d\nreading n=\nreading n=2i %d\n", time.Now().Unix(), time.Now().Unix()+1)))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Token "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, write("nope"))
	assert.Equal(t, http.StatusBadRequest, write("secret"), "a partial write")
	cancel()
	assert.Equal(t, exitOK, <-code, stderr.String())
	seen := readOutput(t, out)
	assert.Equal(t, map[int]int{1: 1, 2: 1}, seen, "the earlier run's output replaced")
	assert.Contains(t, stderr.String(), "replacing the output of an earlier run; --append adds to it instead")
	assert.Contains(t, stderr.String(), "summary: read=3 emitted=2 late=0 invalid=1")
	b, err := os.ReadFile(dead)
	require.NoError(t, err)
	letters := string(b)
	assert.Contains(t, letters, `"line":2,"column":11`)
	assert.Contains(t, letters, `"source":"/api/v2/write?bucket=b\u0026precision=s"`)

	var usage bytes.Buffer
	assert.Equal(t, exitUsage, run(ctx, []string{"ingest", "--http-write", addr, "--broker", "tcp://x:1"}, &bytes.Buffer{}, &usage))
	assert.Contains(t, usage.String(), "missing required flag --topic")
	usage.Reset()
	assert.Equal(t, exitUsage, run(ctx, []string{"ingest"}, &bytes.Buffer{}, &usage))
	assert.Contains(t, usage.String(), "or serve --http-write alone")
}

// TestIngestMQTTAndHTTPWrite runs ingest with an MQTT feed and
// --http-write at once: both reach the output, each source with its own
// spool in the state directory.
func TestIngestMQTTAndHTTPWrite(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	dir := t.TempDir()
	out, addr, state := filepath.Join(dir, "out.lp"), freeAddr(t), filepath.Join(dir, "state")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &mosquittotest.LockedBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"ingest", "--broker", broker.URL(), "--topic", "sensors/#", "--client-id", "both",
			"--http-write", addr, "--state-dir", state, "--out", out, "--append", "--window", "10ms"}, &bytes.Buffer{}, stderr)
	}()
	waitUntil(t, 20*time.Second, "ingest connected and listening", func() bool {
		return strings.Contains(stderr.String(), "mqtt: connected") && strings.Contains(stderr.String(), "httpwrite: listening")
	})
	now := time.Now().UnixNano()
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("both-pub"))
	require.True(t, pub.Connect().WaitTimeout(10*time.Second))
	defer pub.Disconnect(100)
	// Reading n at now+n ns; then -1, a second later on each source,
	// releases them from the buffer that both sources feed.
	for _, r := range []struct {
		n    int
		mqtt bool
	}{{1, true}, {2, false}, {-1, true}, {-1, false}} {
		at := now + int64(r.n)
		if r.n < 0 {
			at = now + int64(time.Second)
		}
		line := fmt.Sprintf("reading n=%di %d", r.n, at)
		if r.mqtt {
			tok := pub.Publish("sensors/s1", 1, false, line)
			require.True(t, tok.WaitTimeout(10*time.Second))
			require.NoError(t, tok.Error())
			continue
		}
		resp, err := http.Post("http://"+addr+"/write?db=d", "text/plain", strings.NewReader(line))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
	}
	waitUntil(t, 20*time.Second, "both readings written", func() bool { return len(readOutput(t, out)) == 2 })
	cancel()
	assert.Equal(t, exitOK, <-code, stderr.String())
	assert.Equal(t, map[int]int{1: 1, 2: 1}, readOutput(t, out))
	assert.DirExists(t, filepath.Join(state, "http"))
	assert.Contains(t, stderr.String(), "summary: read=4 emitted=4 ")
}
