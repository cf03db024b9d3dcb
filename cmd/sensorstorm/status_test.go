package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	replaysrc "github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/statuspage"
)

func TestStatusFlagsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--http-control", "x.lp"}, "--http-control needs --http-addr"},
		{[]string{"replay", "--http-addr", "localhost", "x.lp"}, "--http-addr: want HOST:PORT"},
		{[]string{"run", "--http-addr", "a:b:c", "p.yaml"}, "--http-addr: want HOST:PORT"},
		{[]string{"ingest", "--broker", "tcp://x:1", "--topic", "a", "--http-addr", "nope"}, "--http-addr: want HOST:PORT"},
		{[]string{"ingest", "--broker", "tcp://x:1", "--topic", "a", "--http-control"}, "flag provided but not defined: -http-control"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, exitUsage, run(t.Context(), tc.args, &stdout, &stderr), "%q", tc.args)
		assert.Contains(t, stderr.String(), tc.want, "%q", tc.args)
	}
}

// getJSON decodes the JSON at url into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, url)
	require.NoError(t, json.NewDecoder(res.Body).Decode(v))
}

// startPaged runs the command args, which serves its status page, until
// ctx ends, and returns the page's URL, the command's stderr and the
// channel of its exit code.
func startPaged(t *testing.T, ctx context.Context, args ...string) (string, *announced, <-chan int) {
	t.Helper()
	stderr := &announced{url: make(chan string, 1), pattern: regexp.MustCompile(`status page" url=(http://\S+)`)}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, io.Discard, stderr) }()
	select {
	case url := <-stderr.url:
		return url, stderr, done
	case code := <-done:
		t.Fatalf("%s ended with %d before serving the page:\n%s", args[0], code, stderr)
		return "", nil, nil
	}
}

// TestIngestStatusPage runs ingest with the status page against a real
// broker: the page shows the MQTT source's connections, the messages
// received, acknowledged and spooled and its backlog, serves /metrics, and
// changes nothing.
func TestIngestStatusPage(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// A broker that refuses comes first: the client goes on to the next,
	// and the page tells them apart.
	url, stderr, done := startPaged(t, ctx, "ingest", "--broker", "tcp://127.0.0.1:1", "--broker", broker.URL(), "--topic", "sensors/#",
		"--client-id", "status-page", "--window", "100ms", "--state-dir", filepath.Join(dir, "state"), "--out", filepath.Join(dir, "out.lp"),
		"--http-addr", "127.0.0.1:0")

	var snap statuspage.Snapshot
	waitUntil(t, 20*time.Second, "the page shows the connection", func() bool {
		getJSON(t, url+"snapshot", &snap)
		// Connected means subscribed: what is published now arrives.
		return len(snap.Connectors) == 1 && len(snap.Connectors[0].Connections) == 2 && snap.Connectors[0].Connections[1].State == "connected"
	})
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("status-page-publisher"))
	require.True(t, pub.Connect().WaitTimeout(10*time.Second))
	defer pub.Disconnect(100)
	base := time.Now().UnixNano()
	for i := range 5 {
		msg := fmt.Sprintf("env,room=a t=%d %d", 20+i, base+int64(i)*int64(time.Millisecond))
		require.True(t, pub.Publish("sensors/a", 1, false, msg).WaitTimeout(10*time.Second))
	}
	waitUntil(t, 20*time.Second, "the page shows the messages", func() bool {
		getJSON(t, url+"snapshot", &snap)
		counters := map[string]int64{}
		for _, c := range snap.Connectors[0].Counters {
			counters[c.Name] = c.Value
		}
		return counters["received"] == 5 && counters["acknowledged"] == 5 && counters["spooled"] == 5
	})
	mqtt := snap.Connectors[0]
	require.Equal(t, "mqtt", mqtt.Component)
	require.Equal(t, []statuspage.ConnectionSnapshot{{Address: "tcp://127.0.0.1:1", State: "standby"}, {Address: broker.URL(), State: "connected"}}, mqtt.Connections)
	require.NotNil(t, mqtt.Backlog, "spool mode has a backlog")
	require.False(t, mqtt.Backlog.AtQuota)
	var names []string
	for _, c := range snap.Components {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"mqtt", "out"}, names)
	require.Nil(t, snap.Replay)
	require.False(t, snap.Control)

	res, err := http.Get(url + "metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Contains(t, string(body), `sensorstorm_particles_out_total{component="mqtt"} 5`)
	require.Contains(t, string(body), `sensorstorm_backlog_at_quota{component="mqtt"} 0`)
	res, err = http.Post(url+"pause", "", nil)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode, "read-only")

	cancel()
	require.Equal(t, exitOK, <-done, stderr.String())
}

// TestIngestStatusPageShowsEveryConnector runs ingest with an MQTT feed,
// --http-write and --publish: the page has a panel of each, with its
// connections and counters, in the order of the graph.
func TestIngestStatusPageShowsEveryConnector(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	dir := t.TempDir()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	url, stderr, done := startPaged(t, ctx, "ingest", "--broker", broker.URL(), "--topic", "sensors/#", "--client-id", "every-connector",
		"--http-write", addr, "--publish", "out/{room}", "--window", "10ms", "--state-dir", filepath.Join(dir, "state"),
		"--out", filepath.Join(dir, "out.lp"), "--http-addr", "127.0.0.1:0")
	var snap statuspage.Snapshot
	defer func() {
		if t.Failed() {
			t.Logf("last snapshot's connectors: %+v", snap.Connectors)
		}
	}()
	waitUntil(t, 20*time.Second, "the sources connected and listening", func() bool {
		getJSON(t, url+"snapshot", &snap)
		return len(snap.Connectors) == 3 && snap.Connectors[0].Connections[0].State == "connected" &&
			snap.Connectors[1].Connections[0].State == "listening"
	})
	require.Equal(t, "idle", snap.Connectors[2].Connections[0].State, "the sink connects with its first particle")
	// The second point, a second later, releases the first from the
	// synchronization buffer.
	now := time.Now()
	body := fmt.Sprintf("env,room=a t=1 %d\nenv,room=a t=2 %d\n", now.UnixNano(), now.Add(time.Second).UnixNano())
	resp, err := http.Post("http://"+addr+"/write?db=d", "text/plain", strings.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	counter := func(c statuspage.ConnectorSnapshot, name string) int64 {
		for _, k := range c.Counters {
			if k.Name == name {
				return k.Value
			}
		}
		t.Fatalf("%s has no counter %s: %v", c.Component, name, c.Counters)
		return 0
	}
	waitUntil(t, 20*time.Second, "the page shows the points written and published", func() bool {
		getJSON(t, url+"snapshot", &snap)
		return counter(snap.Connectors[1], "points") == 2 && counter(snap.Connectors[2], "confirmed") >= 1
	})
	var names []string
	for _, c := range snap.Connectors {
		names = append(names, c.Component)
	}
	require.Equal(t, []string{"mqtt", "http", "publish"}, names)
	require.Equal(t, []statuspage.ConnectionSnapshot{{Address: broker.URL(), State: "connected"}}, snap.Connectors[0].Connections)
	require.Equal(t, []statuspage.ConnectionSnapshot{{Address: addr, State: "listening"}}, snap.Connectors[1].Connections)
	require.Equal(t, int64(1), counter(snap.Connectors[1], "requests"))
	require.NotNil(t, snap.Connectors[1].Backlog, "the HTTP source's spool")
	require.Equal(t, []statuspage.ConnectionSnapshot{{Address: broker.URL(), State: "connected"}}, snap.Connectors[2].Connections)
	require.Nil(t, snap.Connectors[2].Backlog, "the sink has no spool")

	cancel()
	require.Equal(t, exitOK, <-done, stderr.String())
}

// TestRunServesTheStatusPage runs a pipeline with the page: it is served
// while the pipeline runs and stopped after.
func TestRunServesTheStatusPage(t *testing.T) {
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--http-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "../../pipelines/library1-mean.yaml"}, io.Discard, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	require.Regexp(t, `serving the status page" url=http://127\.0\.0\.1:\d+/`, stderr.String())
	require.Contains(t, stderr.String(), "serving metrics", "--metrics-addr keeps working")
}

// The status page's /status serves the replay's Status as the replay's
// own control endpoint does, whatever its speed.
func TestStatusPageReplayIsTheReplaysStatus(t *testing.T) {
	src, err := replaysrc.New(replaysrc.Config{Inputs: []replaysrc.Input{{Path: "../../testdata/library1-r1.lp"}}, Speed: 10})
	require.NoError(t, err)
	page := pageReplay(src)
	for _, speed := range []replaysrc.Speed{10, 0.5, replaysrc.Max} {
		require.NoError(t, src.SetSpeed(speed))
		want, err := json.Marshal(src.Status())
		require.NoError(t, err)
		got, err := json.Marshal(page())
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(got), "speed %s", speed)
	}
	require.Equal(t, 0.0, page().Pace, "unpaced")
	require.NoError(t, src.SetSpeed(10))
	require.Equal(t, 10.0, page().Pace)
}

// TestRunStatusPageShowsThePipelinesConnectors runs a pipeline with an
// HTTP write source: the page finds its panel among the pipeline's
// instances.
func TestRunStatusPageShowsThePipelinesConnectors(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	file := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`sources:
  - name: writes
    http: {addr: %q, state_dir: state}
bolts:
  - name: out
    input: {from: writes, grouping: global}
    sink: {file: out.lp}
`, addr)), 0o644))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	url, stderr, done := startPaged(t, ctx, "run", "--http-addr", "127.0.0.1:0", file)
	var snap statuspage.Snapshot
	waitUntil(t, 20*time.Second, "the source listening", func() bool {
		getJSON(t, url+"snapshot", &snap)
		return len(snap.Connectors) == 1 && snap.Connectors[0].Connections[0].State == "listening"
	})
	c := snap.Connectors[0]
	require.Equal(t, "writes", c.Component)
	require.Equal(t, []statuspage.ConnectionSnapshot{{Address: addr, State: "listening"}}, c.Connections)
	require.Equal(t, statuspage.CounterSnapshot{Name: "requests", Value: 0}, c.Counters[0])
	require.NotNil(t, c.Backlog)
	cancel()
	require.Equal(t, exitOK, <-done, stderr.String())
}
