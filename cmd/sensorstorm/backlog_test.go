package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/metrics"
	"github.com/sensorstorm/sensorstorm/spool"
)

func TestBacklogClosingLines(t *testing.T) {
	left := metrics.BacklogFunc(func() (spool.BacklogStats, bool) { return spool.BacklogStats{Records: 12, Bytes: 3400}, true })
	none := metrics.BacklogFunc(func() (spool.BacklogStats, bool) { return spool.BacklogStats{}, false })
	var w strings.Builder
	r := (&logFlags{}).reporter(&w)
	r.line("run", backlogAttrs(left)...)
	assert.Equal(t, "run: backlog=12 backlog_bytes=3400\n", w.String())
	assert.Empty(t, backlogAttrs(none), "no fields without a spool")

	w.Reset()
	writeBacklogKept(r, "ingest: mqtt", left, "state")
	writeBacklogKept(r, "ingest: http", none, "state/http")
	writeBacklogKept(r, "ingest: http", metrics.BacklogFunc(func() (spool.BacklogStats, bool) { return spool.BacklogStats{}, true }), "state/http")
	assert.Equal(t, "ingest: mqtt: backlog of 12 messages (3400 bytes) kept in the spool in state: processed first at the next start\n", w.String(),
		"only a backlog left is worth a line")
}

// TestRunReportsTheBacklog runs a pipeline reading MQTT in spool mode: its
// backlog is served as metrics while it runs and printed at the end.
func TestRunReportsTheBacklog(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`sources:
  - name: sensors
    mqtt: {broker: `+broker.URL()+`, topics: [sensors/#], qos: 1, client_id: backlog-run, state_dir: state}
bolts:
  - name: out
    input: {from: sensors, grouping: global}
    sink: {file: "-"}
`), 0o644))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &mosquittotest.LockedBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"run", "--metrics-addr", "127.0.0.1:0", file}, io.Discard, stderr) }()
	waitUntil(t, 20*time.Second, "connected", func() bool { return strings.Contains(stderr.String(), "mqtt: connected") })
	addr := regexp.MustCompile(`serving metrics" addr=(\S+)`).FindStringSubmatch(stderr.String())
	require.NotNil(t, addr, stderr.String())
	res, err := http.Get("http://" + addr[1] + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(body), `sensorstorm_backlog_messages{component="sensors"} 0`)
	assert.Contains(t, string(body), `sensorstorm_backlog_at_quota{component="sensors"} 0`)

	cancel()
	select {
	case code := <-done:
		require.Equal(t, exitOK, code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop")
	}
	assert.Contains(t, stderr.String(), "run: source=sensors backlog=0 backlog_bytes=0\n")
	assert.NotContains(t, stderr.String(), "kept in the spool")
	assert.Regexp(t, `\nsummary: read=0 `, stderr.String(), "the summary stays last")
}
