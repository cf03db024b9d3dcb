package pipeline_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/pipeline"
)

const goodHTTP = `sources:
  - name: influx
    http: {addr: "ADDR", state_dir: state, token: secret, max_body_size: 1048576, future_bound: 2h,
           backlog: {max_backlog_bytes: 1073741824, min_free_bytes: 1048576}}
bolts:
  - name: out
    input: {from: influx, grouping: global}
    window: 10ms
    sink: {file: OUT}
`

// TestHTTPSource runs a pipeline with an http source: a write with the
// token reaches the file sink, and the spool is in the state directory
// relative to the pipeline's.
func TestHTTPSource(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	out := filepath.Join(dir, "out.lp")
	src := strings.NewReplacer("ADDR", addr, "OUT", out).Replace(goodHTTP)
	p, err := pipeline.Parse([]byte(src), filepath.Join(dir, "p.yaml"))
	require.NoError(t, err)
	assert.True(t, p.Live())
	assert.Equal(t, int64(1<<30), p.Sources[0].HTTP.Backlog.MaxBytes)
	assert.Equal(t, int64(1<<20), p.Sources[0].HTTP.Backlog.MinFree)
	assert.Equal(t, 2*time.Hour, p.Sources[0].HTTP.FutureBound)
	built, err := p.Build(pipeline.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- built.Run(ctx) }()

	now := time.Now().Unix()
	body := fmt.Sprintf("env,room=a t=1 %d\nenv,room=a t=2 %d\n", now, now+1)
	var status int
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v2/write?bucket=b&precision=s", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Token secret")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			status = resp.StatusCode
			break
		}
		time.Sleep(20 * time.Millisecond) // not listening yet
	}
	require.Equal(t, http.StatusNoContent, status)
	cancel()
	require.NoError(t, <-done)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("env,room=a t=1 %d000000000\nenv,room=a t=2 %d000000000\n", now, now+1), string(b))
	assert.DirExists(t, filepath.Join(dir, "state"))
}

func TestParseHTTPErrors(t *testing.T) {
	testParseErrors(t, goodHTTP, []parseErrorCase{
		{"no state dir", "state_dir: state, ", "", []string{`p.yaml:3:11: source "influx": http: no state_dir`}},
		{"unknown key", "token:", "tokn:", []string{`unknown key "tokn"`}},
		{"negative quota", "max_backlog_bytes: 1073741824", "max_backlog_bytes: -1", []string{"negative max_backlog_bytes or min_free_bytes"}},
		{"unknown backlog key", "min_free_bytes:", "min_free:", []string{`unknown key "min_free"`}},
		{"parallelism", "    http:", "    parallelism: 2\n    http:", []string{"an http source listens on one address"}},
		{"acking off", "sources:\n", "acking: {enabled: false}\nsources:\n", []string{`source "influx": an http source learns from acking`}},
		{"two types", "    http:", "    file: {paths: [x.lp]}\n    http:", []string{`source "influx": set one type, not file and http`}},
		{"state dir taken", "bolts:\n", "  - name: again\n    http: {addr: \"localhost:1\", state_dir: state}\nbolts:\n", []string{`state_dir "state" is source "influx"'s too`}},
		{"mixed with a file source", "bolts:\n", "  - name: wsn\n    file: {paths: [x.lp]}\nbolts:\n", []string{`source "influx": an http source runs on the live clock and file source "wsn" replays on its own`}},
	})
}
