package statuspage_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/statuspage"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start is the fake wall clock's time when a test begins.
var start = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// page is a status page under test: its server runs on a fake clock
// behind an httptest server.
type page struct {
	topo *topology.Topology
	wall *streamclock.Fake
	srv  *statuspage.Server
	http *httptest.Server
	stop func() // ends Run and waits for it
}

// newPage serves the page of a two-component topology (source "in", sink
// "out"); cfg's Topology and Wall are set here.
func newPage(t *testing.T, cfg statuspage.Config) *page {
	t.Helper()
	topo, err := topology.New(topology.Config{})
	require.NoError(t, err)
	topo.AddSource("in", nil, topology.SourceConfig{})
	topo.AddBolt("out", operation.Stateless(operation.Func(nil)), topology.BoltConfig{Parallelism: 2}).Input("in", topology.Fields("node"))
	p := &page{topo: topo, wall: streamclock.NewFake(start)}
	cfg.Topology, cfg.Wall = topo, p.wall
	p.srv, err = statuspage.New(cfg)
	require.NoError(t, err)
	p.http = httptest.NewServer(p.srv)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.srv.Run(ctx) })
	var once sync.Once
	p.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(func() {
		p.stop()
		p.http.Close()
	})
	return p
}

// events is one client's stream of /events.
type events struct {
	t      *testing.T
	body   io.ReadCloser
	r      *bufio.Reader
	cancel context.CancelFunc
}

func (p *page) connect(t *testing.T) *events {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", p.http.URL+"/events", nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	e := &events{t: t, body: res.Body, r: bufio.NewReader(res.Body), cancel: cancel}
	t.Cleanup(e.close)
	return e
}

func (e *events) close() {
	e.cancel()
	e.body.Close()
}

// next reads the next event: its lines, without the blank line ending it.
func (e *events) next() ([]string, error) {
	var lines []string
	for {
		line, err := e.r.ReadString('\n')
		if err != nil {
			return lines, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			return lines, nil
		}
		lines = append(lines, line)
	}
}

// snapshot reads events until a snapshot, skipping comments, and checks
// its format: an event name and one line of JSON.
func (e *events) snapshot() statuspage.Snapshot {
	e.t.Helper()
	for {
		lines, err := e.next()
		require.NoError(e.t, err)
		if len(lines) == 1 && strings.HasPrefix(lines[0], ":") {
			continue
		}
		require.Len(e.t, lines, 2, "an event is its name and one data line: %q", lines)
		require.Equal(e.t, "event: snapshot", lines[0])
		data, ok := strings.CutPrefix(lines[1], "data: ")
		require.True(e.t, ok, lines[1])
		var s statuspage.Snapshot
		require.NoError(e.t, json.Unmarshal([]byte(data), &s))
		return s
	}
}

// tick moves the fake clock to the next update.
func (p *page) tick() { p.wall.Advance(time.Second) }

func TestEventsCarryTheGraphAndTheFiguresOfEveryComponent(t *testing.T) {
	p := newPage(t, statuspage.Config{Title: "test run"})
	ev := p.connect(t)
	first := ev.snapshot()
	require.Equal(t, "test run", first.Title)
	require.Equal(t, start.UnixMilli(), first.Wall)

	in, out := p.topo.Stats("in"), p.topo.Stats("out")
	in.Out.Add(3000)
	out.In.Add(2500)
	out.Late.Add(7)
	out.Buffered.Add(12)
	out.Watermark.Store(start.Add(-1500 * time.Millisecond).UnixNano())
	p.tick()
	s := ev.snapshot()
	require.Equal(t, start.Add(time.Second).UnixMilli(), s.Wall)
	require.Len(t, s.Components, 2)
	require.Equal(t, topology.GraphComponent{Name: "in", Kind: "source", Parallelism: 1}, s.Components[0].GraphComponent)
	require.Equal(t, topology.GraphComponent{Name: "out", Kind: "sink", Parallelism: 2}, s.Components[1].GraphComponent)
	require.Equal(t, []topology.GraphEdge{{From: "in", To: "out", Grouping: "fields(node)"}}, s.Edges)
	require.Equal(t, uint64(3000), s.Components[0].Out)
	require.Equal(t, 3000.0, s.Components[0].RateOut, "particles a second over the fake second")
	o := s.Components[1]
	require.Equal(t, uint64(2500), o.In)
	require.Equal(t, 2500.0, o.RateIn)
	require.Equal(t, uint64(7), o.Late)
	require.Equal(t, int64(12), o.Buffered)
	require.NotNil(t, o.WatermarkLag)
	require.InDelta(t, 2.5, *o.WatermarkLag, 1e-9, "the stream clock (here the wall clock) minus the watermark")
	require.Nil(t, s.Components[0].WatermarkLag, "no watermark, no lag")
}

func TestOneEventPerUpdateWhateverHappensBetween(t *testing.T) {
	p := newPage(t, statuspage.Config{})
	ev := p.connect(t)
	require.Equal(t, start.UnixMilli(), ev.snapshot().Wall)
	for i := 1; i <= 5; i++ {
		// Particles between updates change figures, never the pace.
		p.topo.Stats("in").Out.Add(1_000_000)
		p.tick()
		s := ev.snapshot()
		require.Equal(t, start.Add(time.Duration(i)*time.Second).UnixMilli(), s.Wall, "update %d comes once, in order", i)
		require.Equal(t, uint64(i)*1_000_000, s.Components[0].Out)
	}
}

func TestManyClientsGetEveryUpdate(t *testing.T) {
	p := newPage(t, statuspage.Config{})
	clients := make([]*events, 50)
	for i := range clients {
		clients[i] = p.connect(t)
		require.Equal(t, start.UnixMilli(), clients[i].snapshot().Wall)
	}
	for i := 1; i <= 3; i++ {
		p.topo.Stats("out").In.Add(10)
		p.tick()
		for _, c := range clients {
			s := c.snapshot()
			require.Equal(t, start.Add(time.Duration(i)*time.Second).UnixMilli(), s.Wall)
			require.Equal(t, uint64(i*10), s.Components[1].In)
		}
	}
}

func TestDisconnectedClientsLeaveNothingBehind(t *testing.T) {
	tap := statuspage.NewTap(statuspage.TapConfig{})
	p := newPage(t, statuspage.Config{Tap: tap})
	var clients []*events
	for range 20 {
		c := p.connect(t)
		c.snapshot()
		clients = append(clients, c)
	}
	for _, c := range clients[:15] {
		c.close()
	}
	p.tick()
	for _, c := range clients[15:] {
		c.snapshot()
	}
	for _, c := range clients[15:] {
		c.close()
	}
	// Once every stream has ended, the tap stops sampling.
	probe := 0
	require.Eventually(t, func() bool {
		before := len(tap.Snapshot().Series)
		probe++
		tap.Offer(reading(0, fmt.Sprint("probe", probe), 1))
		return len(tap.Snapshot().Series) == before
	}, 10*time.Second, 5*time.Millisecond, "the tap samples nothing without clients")
	// The handler goroutines are gone too: goleak checks at the end.
}

// The stream ends with the run's final figures, marked finished, so that
// the page shows them rather than freeze at the last second's.
func TestRunEndingEndsTheStreams(t *testing.T) {
	p := newPage(t, statuspage.Config{})
	ev := p.connect(t)
	require.False(t, ev.snapshot().Finished)
	p.topo.Stats("in").Out.Add(7563)
	p.stop()
	final := ev.snapshot()
	require.True(t, final.Finished)
	require.Equal(t, uint64(7563), final.Components[0].Out)
	_, err := ev.next()
	require.ErrorIs(t, err, io.EOF, "the stream ends with Run")
	res, err := http.Get(p.http.URL + "/events")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "no new stream after Run")
}

func TestTheSampleIsBoundedPerUpdate(t *testing.T) {
	tap := statuspage.NewTap(statuspage.TapConfig{PointsPerTick: 3, History: 100})
	p := newPage(t, statuspage.Config{Tap: tap})
	ev := p.connect(t)
	ev.snapshot()
	for range 2 {
		for i := range 10_000 {
			tap.Offer(reading(int64(i), "a", float64(i)))
			tap.Offer(reading(int64(i), "b", float64(i)))
		}
		p.tick()
	}
	s := ev.snapshot()
	s = ev.snapshot()
	require.NotNil(t, s.Tap)
	require.Len(t, s.Tap.Series, 2)
	for _, series := range s.Tap.Series {
		require.Len(t, series.Points, 6, "%s: 3 points in each of 2 updates", series.Key)
	}
}

// recordingHandler is a replay control that notes the requests it got.
type recordingHandler struct {
	mu   sync.Mutex
	got  []string
	code int
}

func (h *recordingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, r.Method+" "+r.URL.Path)
	w.WriteHeader(h.code)
}

func TestControlOnlyWhenGiven(t *testing.T) {
	post := func(p *page, path string) int {
		res, err := http.Post(p.http.URL+path, "", nil)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	readOnly := newPage(t, statuspage.Config{})
	for _, path := range []string{"/speed?factor=2", "/pause", "/resume"} {
		require.Equal(t, http.StatusMethodNotAllowed, post(readOnly, path), "%s without control", path)
	}
	require.False(t, readOnly.connect(t).snapshot().Control)

	control := &recordingHandler{code: http.StatusOK}
	p := newPage(t, statuspage.Config{Control: control})
	for _, path := range []string{"/speed?factor=2", "/pause", "/resume"} {
		require.Equal(t, http.StatusOK, post(p, path))
	}
	require.Equal(t, []string{"POST /speed", "POST /pause", "POST /resume"}, control.got)
	require.True(t, p.connect(t).snapshot().Control)
}

func TestPageAssetsAndMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "test_total", Help: "A test counter."}))
	p := newPage(t, statuspage.Config{Metrics: reg})
	get := func(path string) (string, string) {
		res, err := http.Get(p.http.URL + path)
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.Header.Get("Content-Type"), string(b)
	}
	total := 0
	for _, tc := range []struct{ path, contentType, contains string }{
		{"/", "text/html", `<script src="app.js">`},
		{"/app.js", "text/javascript", `new EventSource("events")`},
		{"/style.css", "text/css", "#graph"},
		{"/metrics", "text/plain", "test_total 0"},
		{"/snapshot", "application/json", `"components":[{"name":"in"`},
	} {
		ct, body := get(tc.path)
		require.Contains(t, ct, tc.contentType, tc.path)
		require.Contains(t, body, tc.contains, tc.path)
		if !strings.HasPrefix(tc.path, "/metrics") && tc.path != "/snapshot" {
			total += len(body)
		}
	}
	require.Less(t, total, 32<<10, "the page's assets stay small")
	for _, path := range []string{"/status", "/nothing"} {
		res, err := http.Get(p.http.URL + path)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusNotFound, res.StatusCode, "%s without a replay", path)
	}
}

func TestNewWantsATopology(t *testing.T) {
	_, err := statuspage.New(statuspage.Config{})
	require.ErrorIs(t, err, statuspage.ErrNoTopology)
}

// reading is a particle of series node=node at second sec.
func reading(sec int64, node string, v float64) *particle.Particle {
	return &particle.Particle{
		Time: sec * 1e9, Measurement: "wsn", Tags: []particle.Tag{{Key: "node", Value: node}},
		Fields: []particle.Field{{Key: "temperature", Value: particle.Float(v)}},
	}
}

// fakeReplay is a replay whose status the test sets.
type fakeReplay struct {
	mu sync.Mutex
	st statuspage.ReplayStatus
}

func (f *fakeReplay) status() statuspage.ReplayStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeReplay) set(change func(*statuspage.ReplayStatus)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.st)
}

// The ETA is the event time left over the speed, or unpaced over the pace
// since the last update; paused, the page keeps the last one shown.
func TestReplayETA(t *testing.T) {
	first := time.Date(2006, 11, 13, 17, 0, 0, 0, time.UTC)
	r := &fakeReplay{st: statuspage.ReplayStatus{Speed: "1x", Pace: 1, First: first, Last: first.Add(6 * time.Hour), Position: first.Add(10 * time.Minute)}}
	p := newPage(t, statuspage.Config{Replay: r.status})
	ev := p.connect(t)
	s := ev.snapshot()
	require.NotNil(t, s.Replay.ETA)
	require.InDelta(t, (5*time.Hour + 50*time.Minute).Seconds(), *s.Replay.ETA, 1e-6, "at 1x, the real time left")

	r.set(func(st *statuspage.ReplayStatus) { st.Speed, st.Pace = "max", 0 })
	p.tick()
	require.Nil(t, ev.snapshot().Replay.ETA, "unpaced, the position did not move: no pace yet")
	r.set(func(st *statuspage.ReplayStatus) { st.Position = st.Position.Add(10 * time.Minute) })
	p.tick()
	s = ev.snapshot()
	require.NotNil(t, s.Replay.ETA)
	require.InDelta(t, 34, *s.Replay.ETA, 1e-6, "5 h 40 min left at 10 min a second")

	r.set(func(st *statuspage.ReplayStatus) { st.Paused = true })
	p.tick()
	require.Nil(t, ev.snapshot().Replay.ETA, "paused")
}
