package httpwrite_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/spool"
)

// feed writes bodies of lines whose timestamps count up from base, one
// point a nanosecond: the time of each point says which it is.
type feed struct {
	base  int64
	lines int // per body
	sent  int // points written so far
}

// body returns the next body and counts its points as sent; see undo.
func (f *feed) body() []byte {
	var b strings.Builder
	for range f.lines {
		fmt.Fprintf(&b, "env,room=r%d t=%d.5 %d\n", f.sent%7, f.sent, f.base+int64(f.sent))
		f.sent++
	}
	return []byte(b.String())
}

// undo takes back the points of the last body, refused.
func (f *feed) undo() { f.sent -= f.lines }

// times returns the times of the points sent from the from-th on.
func (f *feed) times(from int) []int64 {
	var ts []int64
	for i := from; i < f.sent; i++ {
		ts = append(ts, f.base+int64(i))
	}
	return ts
}

// times returns the times of what the server's bolt collected.
func (s *server) times() []int64 {
	var ts []int64
	for _, p := range s.particles() {
		ts = append(ts, p.Time)
	}
	return ts
}

// late returns the particles the bolt's buffer found late or behind.
func (s *server) late() uint64 {
	st := s.topo.Stats("collect")
	return st.Late.Load() + st.Behind.Load()
}

// backlog returns the source's backlog.
func (s *server) backlog(t testing.TB) spool.BacklogStats {
	t.Helper()
	bl, ok := s.src.BacklogStats()
	require.True(t, ok)
	return bl
}

// TestStalledPipelineNo503 holds the pipeline (its bolt blocks until
// released) while a client writes far more than memory holds: every write
// is answered 204 as soon as it is durable, none 503, the backlog spills to
// disk, and once released every point arrives once, in the order written,
// none late. Every third body is gzip, read back from disk as sent.
func TestStalledPipelineNo503(t *testing.T) {
	const bodies = 300
	gate := make(chan struct{})
	srv := startServerWith(t, httpwrite.Config{MaxInFlightBytes: 4 << 10}, &server{gate: gate, maxPending: 16})
	f := &feed{base: time.Now().UnixNano(), lines: 20}
	start := time.Now()
	gz := http.Header{"Content-Encoding": {"gzip"}}
	for i := range bodies {
		hdr, b := http.Header(nil), f.body()
		if i%3 == 0 {
			hdr, b = gz, gzipped(t, string(b))
		}
		resp, body := post(t, http.MethodPost, srv.url+"/api/v2/write?bucket=b", hdr, b)
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "body %d: %s", i, body)
	}
	wrote := time.Since(start)
	bl := srv.backlog(t)
	assert.Greater(t, bl.OnDisk, int64(bodies/2), "most of the backlog on disk")
	assert.False(t, bl.Full)
	assert.NotZero(t, bl.Oldest)
	assert.Zero(t, srv.src.Stats().Unavailable.Load())
	assert.Less(t, len(srv.particles()), 16, "the pipeline was held")

	close(gate)
	start = time.Now()
	connectortest.WaitFor(t, 60*time.Second, "every point", func() bool { return len(srv.particles()) >= f.sent })
	drained := time.Since(start)
	srv.stop(t)
	assert.Equal(t, f.times(0), srv.times(), "every point once, in order")
	assert.Zero(t, srv.late(), "a drained backlog is not late")
	bl = srv.backlog(t)
	assert.Zero(t, bl.Records, "the backlog drained")
	assert.NotZero(t, bl.ReadBack)
	assert.Zero(t, srv.src.Stats().InFlightBytes.Load())
	t.Logf("%d bodies (%d points) written in %v during the stall, %d read back from disk; drained in %v",
		bodies, f.sent, wrote.Round(time.Millisecond), bl.ReadBack, drained.Round(time.Millisecond))
}

// TestDiskQuota gives the backlog a tiny disk quota and holds the
// pipeline: writes are answered 204 until the quota, then 503 with
// Retry-After; once released, the backlog drains and writes are taken
// again.
func TestDiskQuota(t *testing.T) {
	gate := make(chan struct{})
	srv := startServerWith(t, httpwrite.Config{
		Backlog:    spool.BacklogConfig{MaxBytes: 4 << 10},
		RetryAfter: 2 * time.Second,
	}, &server{gate: gate, maxPending: 1})
	f := &feed{base: time.Now().UnixNano(), lines: 10}
	var resp *http.Response
	var body []byte
	for range 100 {
		resp, body = post(t, http.MethodPost, srv.url+"/api/v2/write?bucket=b", nil, f.body())
		if resp.StatusCode != http.StatusNoContent {
			f.undo()
			break
		}
	}
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	assert.Equal(t, "2", resp.Header.Get("Retry-After"), "the pipeline does not drain: the configured wait")
	assert.Contains(t, string(body), `"code":"unavailable"`)
	assert.Contains(t, string(body), "disk quota")
	bl := srv.backlog(t)
	assert.True(t, bl.Full)
	assert.GreaterOrEqual(t, bl.Bytes, int64(4<<10))
	resp, _ = post(t, http.MethodPost, srv.url+"/write?db=d", nil, []byte("env t=1\n"))
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, uint64(2), srv.src.Stats().Unavailable.Load())

	close(gate)
	connectortest.WaitFor(t, 30*time.Second, "the backlog drained", func() bool {
		bl := srv.backlog(t)
		return bl.Records == 0 && len(srv.particles()) == f.sent
	})
	resp, body = post(t, http.MethodPost, srv.url+"/api/v2/write?bucket=b", nil, f.body())
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	connectortest.WaitFor(t, 30*time.Second, "every point", func() bool { return len(srv.particles()) == f.sent })
	srv.stop(t)
	assert.Equal(t, f.times(0), srv.times())
	assert.Equal(t, uint64(2), srv.src.Stats().Unavailable.Load())
}

// TestRestartDrainsBacklogFirst stops a source whose pipeline is held
// with a backlog on disk: the next run hands the pipeline the bodies not
// completed first, in order, read back from disk, and then a body
// written after the restart.
func TestRestartDrainsBacklogFirst(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	cfg := httpwrite.Config{StateDir: state, MaxInFlightBytes: 1 << 10}
	first := startServerWith(t, cfg, &server{gate: make(chan struct{}), maxPending: 1})
	f := &feed{base: time.Now().UnixNano(), lines: 20}
	for range 50 {
		resp, body := post(t, http.MethodPost, first.url+"/api/v2/write?bucket=b", nil, f.body())
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	}
	first.stop(t)
	done := first.src.Stats().Completed.Load()
	require.Less(t, done, uint64(50), "a backlog is left")

	gate := make(chan struct{})
	second := startServerWith(t, cfg, &server{gate: gate, maxPending: 1})
	bl := second.backlog(t)
	assert.NotZero(t, bl.OnDisk, "the backlog left waits on disk")
	left := f.sent
	resp, body := post(t, http.MethodPost, second.url+"/api/v2/write?bucket=b", nil, f.body())
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	close(gate)
	connectortest.WaitFor(t, 30*time.Second, "the new body", func() bool {
		ts := second.times()
		return len(ts) > 0 && ts[len(ts)-1] == f.base+int64(f.sent-1)
	})
	second.stop(t)
	// The bodies run one did not complete, whole, in order, then the new.
	from := int(50-second.src.Stats().Recovered.Load()) * f.lines
	assert.Equal(t, uint64(50)-done, second.src.Stats().Recovered.Load())
	assert.Equal(t, f.times(from), second.times())
	assert.Subset(t, append(first.times(), f.times(from)[:left-from]...), f.times(0)[:left], "nothing lost")
	assert.Zero(t, second.late())
	assert.Zero(t, second.backlog(t).Records)
}

// TestConcurrentWritesDuringStall has clients write at once while the
// pipeline is held, so that their syncs overlap and finish out of order:
// the backlog still takes every body once, and every point arrives once.
func TestConcurrentWritesDuringStall(t *testing.T) {
	const clients, bodies = 8, 40
	gate := make(chan struct{})
	srv := startServerWith(t, httpwrite.Config{MaxInFlightBytes: 4 << 10}, &server{gate: gate, maxPending: 16})
	base := time.Now().UnixNano()
	feeds := make([]*feed, clients)
	var wg sync.WaitGroup
	for c := range clients {
		// Each client its own range of times.
		feeds[c] = &feed{base: base + int64(c)*1e9, lines: 10}
		wg.Go(func() {
			for range bodies {
				resp, body := post(t, http.MethodPost, srv.url+"/api/v2/write?bucket=b", nil, feeds[c].body())
				assert.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
			}
		})
	}
	wg.Wait()
	assert.Greater(t, srv.backlog(t).OnDisk, int64(clients*bodies/2), "most of the backlog on disk")
	close(gate)
	connectortest.WaitFor(t, 60*time.Second, "every point", func() bool { return len(srv.particles()) >= clients*bodies*10 })
	srv.stop(t)
	var want []int64
	for _, f := range feeds {
		want = append(want, f.times(0)...)
	}
	assert.ElementsMatch(t, want, srv.times(), "every point once")
	assert.Zero(t, srv.backlog(t).Records)
}
