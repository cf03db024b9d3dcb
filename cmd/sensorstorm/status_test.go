package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
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

// TestIngestStatusPage runs ingest with the status page against a real
// broker: the page shows the connection, the messages received and
// acknowledged and the spool, serves /metrics, and changes nothing.
func TestIngestStatusPage(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &announced{url: make(chan string, 1), pattern: regexp.MustCompile(`status page" url=(http://\S+)`)}
	done := make(chan int, 1)
	go func() {
		// A broker that refuses comes first: the client goes on to the
		// next, and the page tells them apart.
		done <- run(ctx, []string{"ingest", "--broker", "tcp://127.0.0.1:1", "--broker", broker.URL(), "--topic", "sensors/#", "--client-id", "status-page",
			"--window", "100ms", "--state-dir", filepath.Join(dir, "state"), "--out", filepath.Join(dir, "out.lp"),
			"--http-addr", "127.0.0.1:0"}, io.Discard, stderr)
	}()
	var url string
	select {
	case url = <-stderr.url:
	case code := <-done:
		t.Fatalf("ingest ended with %d before serving the page:\n%s", code, stderr)
	}

	var snap statuspage.Snapshot
	waitUntil(t, 20*time.Second, "the page shows the connection", func() bool {
		getJSON(t, url+"snapshot", &snap)
		// Connected means subscribed: what is published now arrives.
		return snap.MQTT != nil && len(snap.MQTT.Brokers) == 2 && snap.MQTT.Brokers[1].State == "connected"
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
		return snap.MQTT != nil && snap.MQTT.Received == 5 && snap.MQTT.Acked == 5
	})
	require.Equal(t, []statuspage.BrokerSnapshot{{URL: "tcp://127.0.0.1:1", State: "standby"}, {URL: broker.URL(), State: "connected"}}, snap.MQTT.Brokers)
	require.NotNil(t, snap.MQTT.Spool, "spool mode has a spool")
	require.NotNil(t, snap.MQTT.Backlog, "and a backlog")
	require.False(t, snap.MQTT.Backlog.AtQuota)
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

// TestRunServesTheStatusPage runs a pipeline with the page: it is served
// while the pipeline runs and stopped after.
func TestRunServesTheStatusPage(t *testing.T) {
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--http-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "../../pipelines/library1-mean.yaml"}, io.Discard, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	require.Regexp(t, `serving the status page" url=http://127\.0\.0\.1:\d+/`, stderr.String())
	require.Contains(t, stderr.String(), "serving metrics", "--metrics-addr keeps working")
}
