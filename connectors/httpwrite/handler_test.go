package httpwrite_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
)

func gzipped(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// lineErr is an entry of an error body's "errors".
type lineErr struct {
	Line, Column int
	Message      string
}

// errorBody is an error body of either API.
type errorBody struct {
	Code, Message, Error string
	Line                 int
	Errors               []lineErr
}

// TestWrite runs write requests against a real server with a token and a
// small body limit: the status, the error body, what reaches the
// pipeline and what reaches the dead-letter sink.
func TestWrite(t *testing.T) {
	now := time.Now()
	base := now.UnixNano()
	line := func(n int) string { return fmt.Sprintf("env,room=r%d t=%d.5 %d", n%3, n, base+int64(n)) }
	good := line(1) + "\n" + line(2) + "\n"
	auth := http.Header{"Authorization": {"Token secret"}}
	gz := http.Header{"Authorization": {"Token secret"}, "Content-Encoding": {"gzip"}}
	for _, tc := range []struct {
		name     string
		method   string
		target   string
		hdr      http.Header
		body     []byte
		status   int
		code     string    // v2 error code
		errors   []lineErr // positions of bad lines, messages left out
		points   int       // reaching the pipeline
		dead     int       // dead letters
		contains string    // in the error message
	}{
		{name: "v2", target: "/api/v2/write?bucket=b&org=o", hdr: auth, body: []byte(good), status: 204, points: 2},
		{name: "v2 bearer", target: "/api/v2/write?bucket=b", hdr: http.Header{"Authorization": {"Bearer secret"}}, body: []byte(good), status: 204, points: 2},
		{name: "v1 token", target: "/write?db=d", hdr: auth, body: []byte(good), status: 204, points: 2},
		{name: "v1 query password", target: "/write?db=d&u=me&p=secret", body: []byte(good), status: 204, points: 2},
		{name: "v1 basic", target: "/write?db=d", hdr: http.Header{"Authorization": {"Basic " + basic("me", "secret")}}, body: []byte(good), status: 204, points: 2},
		{name: "gzip", target: "/api/v2/write?bucket=b", hdr: gz, body: gzipped(t, good), status: 204, points: 2},
		{name: "precision s", target: "/api/v2/write?bucket=b&precision=s", hdr: auth, body: fmt.Appendf(nil, "env t=1 %d\n", now.Unix()), status: 204, points: 1},
		{name: "v1 precision u", target: "/write?db=d&precision=u", hdr: auth, body: fmt.Appendf(nil, "env t=1 %d\n", now.UnixMicro()), status: 204, points: 1},
		{name: "empty", target: "/api/v2/write?bucket=b", hdr: auth, status: 204},
		{
			name: "partial", target: "/api/v2/write?bucket=b", hdr: auth,
			body:   []byte(line(1) + "\nenv t=\n" + line(2) + "\nenv,room t=1\n# comment\nenv t=\"open\n"),
			status: 400, code: "invalid", points: 2, dead: 3, contains: "partial write error (2 written)",
			errors: []lineErr{{Line: 2, Column: 7}, {Line: 4, Column: 5}, {Line: 6, Column: 7}},
		},
		{
			name: "partial gzip v1", target: "/write?db=d", hdr: gz, body: gzipped(t, "bad\n"+line(1)),
			status: 400, points: 1, dead: 1, errors: []lineErr{{Line: 1, Column: 4}}, contains: "partial write",
		},
		{
			name: "beyond the future bound", target: "/api/v2/write?bucket=b", hdr: auth,
			body:   fmt.Appendf(nil, "%s\nenv t=2 %d\n", line(1), now.Add(syncbuffer.DefaultFutureBound+time.Minute).UnixNano()),
			status: 400, code: "invalid", points: 1, dead: 1, errors: []lineErr{{Line: 2}}, contains: "future_bound",
		},
		{
			name: "all bad", target: "/api/v2/write?bucket=b", hdr: auth, body: []byte("x\ny z\n"),
			status: 400, code: "invalid", dead: 2, errors: []lineErr{{Line: 1, Column: 2}, {Line: 2, Column: 4}}, contains: "no valid line",
		},
		{name: "no token", target: "/api/v2/write?bucket=b", body: []byte(good), status: 401, code: "unauthorized"},
		{name: "wrong token", target: "/api/v2/write?bucket=b", hdr: http.Header{"Authorization": {"Token nope"}}, body: []byte(good), status: 401, code: "unauthorized"},
		{name: "v2 takes no query password", target: "/api/v2/write?bucket=b&p=secret", body: []byte(good), status: 401, code: "unauthorized"},
		{name: "v1 wrong basic", target: "/write?db=d", hdr: http.Header{"Authorization": {"Basic " + basic("me", "nope")}}, body: []byte(good), status: 401},
		{name: "too large", target: "/api/v2/write?bucket=b", hdr: auth, body: []byte(strings.Repeat(line(1)+"\n", 20)), status: 413, code: "request too large", contains: "limit of 512 bytes"},
		{name: "too large gzip", target: "/api/v2/write?bucket=b", hdr: gz, body: gzipped(t, strings.Repeat(line(1)+"\n", 20)), status: 413, code: "request too large", contains: "limit of 512 bytes (max_body_size) after decompression"},
		{name: "gzip without its header", target: "/api/v2/write?bucket=b", hdr: auth, body: gzipped(t, good), status: 400, code: "invalid", contains: "Content-Encoding"},
		{name: "broken gzip", target: "/api/v2/write?bucket=b", hdr: gz, body: []byte(good), status: 400, code: "invalid", contains: "gzip"},
		{name: "truncated gzip", target: "/api/v2/write?bucket=b", hdr: gz, body: gzipped(t, good)[:20], status: 400, code: "invalid", contains: "gzip"},
		{name: "other encoding", target: "/api/v2/write?bucket=b", hdr: http.Header{"Authorization": {"Token secret"}, "Content-Encoding": {"br"}}, body: []byte(good), status: 415, code: "invalid"},
		{name: "no bucket", target: "/api/v2/write?org=o", hdr: auth, body: []byte(good), status: 400, code: "invalid", contains: "missing bucket"},
		{name: "no db", target: "/write", hdr: auth, body: []byte(good), status: 400, contains: "missing db"},
		{name: "bad precision", target: "/api/v2/write?bucket=b&precision=h", hdr: auth, body: []byte(good), status: 400, code: "invalid", contains: "precision"},
		{name: "GET", method: http.MethodGet, target: "/api/v2/write?bucket=b", hdr: auth, status: 405, code: "method not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, httpwrite.Config{Token: "secret", MaxBodySize: 512}, nil)
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			resp, body := post(t, method, srv.url+tc.target, tc.hdr, tc.body)
			require.Equal(t, tc.status, resp.StatusCode, "%s", body)
			if tc.status != http.StatusNoContent {
				var eb errorBody
				require.NoError(t, json.Unmarshal(body, &eb), "%s", body)
				assert.Equal(t, tc.code, eb.Code)
				msg := eb.Message + eb.Error
				assert.NotEmpty(t, msg)
				assert.Contains(t, msg, tc.contains)
				var pos []lineErr
				for _, e := range eb.Errors {
					assert.NotEmpty(t, e.Message)
					pos = append(pos, lineErr{Line: e.Line, Column: e.Column})
				}
				assert.Equal(t, tc.errors, pos)
				if tc.code != "" && len(tc.errors) > 0 {
					assert.Equal(t, tc.errors[0].Line, eb.Line, "InfluxDB's line member")
				}
			}
			if tc.points > 0 {
				connectortest.WaitFor(t, 10*time.Second, "the points", func() bool { return len(srv.particles()) >= tc.points })
			}
			srv.stop(t)
			assert.Len(t, srv.particles(), tc.points)
			dead := srv.dead.All()
			require.Len(t, dead, tc.dead)
			for i, d := range dead {
				de, ok := errors.AsType[*particle.DecodeError](d.Err)
				require.True(t, ok, "dead letter %d: %v", i, d.Err)
				assert.Equal(t, tc.errors[i].Line, de.Line)
				assert.Equal(t, tc.errors[i].Column, de.Column)
				assert.Contains(t, de.Source, tc.target[:strings.IndexByte(tc.target, '?')])
				assert.NotContains(t, de.Source, "secret", "credentials stay out of dead letters")
				assert.NotEmpty(t, d.Raw)
			}
			st := srv.src.Stats()
			assert.Equal(t, uint64(tc.dead), st.Invalid.Load())
			assert.Equal(t, uint64(tc.points), st.Emitted.Load())
		})
	}
}

func basic(user, pass string) string {
	req, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	req.SetBasicAuth(user, pass)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

// TestNoTimestamp checks that a line without a timestamp takes the time
// the body was received, truncated to the write's precision as InfluxDB
// truncates it.
func TestNoTimestamp(t *testing.T) {
	at := time.Now().Truncate(time.Second).Add(123456789)
	srv := startServer(t, httpwrite.Config{Wall: streamclock.NewFake(at)}, nil)
	for i, tc := range []struct {
		target string
		want   time.Duration // after the whole second
	}{
		{"/api/v2/write?bucket=b&precision=s", 0},
		{"/api/v2/write?bucket=b&precision=ms", 123 * time.Millisecond},
		{"/write?db=d&precision=u", 123456 * time.Microsecond},
		{"/api/v2/write?bucket=b", 123456789},
	} {
		resp, body := post(t, http.MethodPost, srv.url+tc.target, nil, fmt.Appendf(nil, "env,n=%d t=1\n", i))
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
		connectortest.WaitFor(t, 10*time.Second, "the point", func() bool { return len(srv.particles()) == i+1 })
		p := srv.particles()[i]
		n, _ := p.Tag("n")
		assert.Equal(t, fmt.Sprint(i), n, tc.target)
		assert.Equal(t, at.Truncate(time.Second).Add(tc.want).UnixNano(), p.Time, tc.target)
	}
}

// TestHealth checks the health checks clients make before writing.
func TestHealth(t *testing.T) {
	srv := startServer(t, httpwrite.Config{Token: "secret"}, nil)
	resp, _ := post(t, http.MethodGet, srv.url+"/ping", nil, nil)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("X-Influxdb-Version"))
	resp, body := post(t, http.MethodGet, srv.url+"/health", nil, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `"status":"pass"`)
}

// TestProbes sends the requests clients make before writing, as they
// send them, and checks the answers: InfluxDB 2's /ready and
// /api/v2/buckets (the official clients' Ready and FindBucketByName),
// 1.x's /query with Telegraf's CREATE DATABASE and Grafana's SHOW
// DATABASES, and a clear 4xx for anything else.
func TestProbes(t *testing.T) {
	srv := startServer(t, httpwrite.Config{Token: "secret"}, nil)
	auth := http.Header{"Authorization": {"Token secret"}}
	form := http.Header{"Authorization": {"Token secret"}, "Content-Type": {"application/x-www-form-urlencoded"}}
	resp, body := post(t, http.MethodPost, srv.url+"/write?db=written", auth, []byte("env t=1\n"))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	resp, body = post(t, http.MethodPost, srv.url+"/api/v2/write?bucket=written&org=o", auth, []byte("env t=1\n"))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	for _, tc := range []struct {
		name, method, target string
		hdr                  http.Header
		body                 string
		status               int
		want                 []string // in the body
	}{
		{name: "ready", method: "GET", target: "/ready", status: 200, want: []string{`"status":"ready"`, `"started":`, `"up":`}},
		{name: "bucket by name", method: "GET", target: "/api/v2/buckets?name=other&org=o", hdr: auth, status: 200, want: []string{`"name":"other"`, `"id":"`}},
		{name: "buckets written to", method: "GET", target: "/api/v2/buckets", hdr: auth, status: 200, want: []string{`"name":"written"`}},
		{name: "buckets need the token", method: "GET", target: "/api/v2/buckets?name=b", status: 401, want: []string{"unauthorized"}},
		{name: "no bucket creation", method: "POST", target: "/api/v2/buckets", hdr: auth, body: `{"name":"b"}`, status: 405},
		{name: "telegraf's create", method: "POST", target: "/query", hdr: form, body: "q=" + url.QueryEscape(`CREATE DATABASE "telegraf"`), status: 200, want: []string{`{"results":[{"statement_id":0}]}`}},
		{name: "grafana's show", method: "GET", target: "/query?u=me&p=secret&q=" + url.QueryEscape("SHOW DATABASES"), status: 200,
			want: []string{`"name":"databases"`, `["telegraf"]`, `["written"]`}},
		{name: "two statements", method: "GET", target: "/query?q=" + url.QueryEscape("create database x with duration 1d; show  databases"), hdr: auth, status: 200,
			want: []string{`"statement_id":1`, `["x"]`}},
		{name: "a query", method: "GET", target: "/query?db=written&q=" + url.QueryEscape("SELECT * FROM env"), hdr: auth, status: 400, want: []string{"stores nothing to query"}},
		{name: "no statement", method: "GET", target: "/query", hdr: auth, status: 400, want: []string{"missing required parameter"}},
		{name: "query needs the token", method: "GET", target: "/query?q=SHOW+DATABASES", status: 401},
		{name: "other path", method: "GET", target: "/api/v2/query", hdr: auth, status: 404, want: []string{"not found", "/api/v2/write"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, tc.method, srv.url+tc.target, tc.hdr, []byte(tc.body))
			assert.Equal(t, tc.status, resp.StatusCode, "%s", body)
			assert.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"))
			for _, w := range tc.want {
				assert.Contains(t, string(body), w)
			}
		})
	}

	client := influxdb2.NewClient(srv.url, "secret")
	defer client.Close()
	ready, err := client.Ready(t.Context())
	require.NoError(t, err)
	assert.EqualValues(t, "ready", *ready.Status)
	b, err := client.BucketsAPI().FindBucketByName(t.Context(), "sensors")
	require.NoError(t, err)
	assert.Equal(t, "sensors", b.Name)
}

// TestReplay starts a source on a spool that a killed process left with a
// body answered and not processed: its valid lines are emitted at the
// precision of its request, its bad line not dead-lettered again, and
// the spool is empty once they are done.
func TestReplay(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	sp, err := spool.Open(state, spool.Config{})
	require.NoError(t, err)
	recv := time.Now()
	then := recv.Unix() - 60
	_, err = sp.Append(spool.AppendRecord(nil, spool.Record{
		Source:   "/api/v2/write?bucket=b&precision=s",
		Received: recv.UnixNano(),
		Payload:  fmt.Appendf(nil, "env t=1 %d\nbad\nenv t=2\n", then),
	}))
	require.NoError(t, err)
	require.NoError(t, sp.Close())

	srv := startServer(t, httpwrite.Config{StateDir: state}, nil)
	connectortest.WaitFor(t, 10*time.Second, "the replayed points", func() bool { return len(srv.particles()) == 2 })
	srv.stop(t)
	got := srv.particles()
	// In event-time order: the line without a timestamp took the receive
	// time, in whole seconds.
	assert.Equal(t, []int64{then * int64(time.Second), recv.Truncate(time.Second).UnixNano()}, []int64{got[0].Time, got[1].Time})
	assert.Empty(t, srv.dead.All())
	assert.Equal(t, uint64(1), srv.src.Stats().Recovered.Load())
	assert.Equal(t, uint64(1), srv.src.Stats().Completed.Load())
	sp, err = spool.Open(state, spool.Config{})
	require.NoError(t, err)
	defer sp.Close()
	assert.Zero(t, sp.Stats().Recovered)
}

// TestRedeliver fails the first attempt of every particle: the engine
// asks the source for each again, which decodes it from the body it kept,
// and every particle arrives once, the same as written.
func TestRedeliver(t *testing.T) {
	srv := startServerWith(t, httpwrite.Config{}, &server{failFirst: true})
	base := time.Now().UnixNano()
	var body strings.Builder
	for i := range 20 {
		fmt.Fprintf(&body, "env,room=r%d t=%d.5,note=\"n%d\" %d\n", i%3, i, i, base+int64(i))
	}
	body.WriteString("env t=\n") // a bad line does not shift the others
	resp, _ := post(t, http.MethodPost, srv.url+"/api/v2/write?bucket=b", nil, []byte(body.String()))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	connectortest.WaitFor(t, 10*time.Second, "every particle", func() bool { return len(srv.particles()) == 20 })
	srv.stop(t)
	for i, p := range srv.particles() {
		line, err := particle.AppendLineProtocol(nil, &p, particle.Nanosecond)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("env,room=r%d t=%d.5,note=\"n%d\" %d\n", i%3, i, i, base+int64(i)), string(line))
	}
	st := srv.src.Stats()
	assert.Equal(t, uint64(1), st.Completed.Load())
	assert.Zero(t, st.Failed.Load())
	assert.Zero(t, st.InFlightBytes.Load())
}
