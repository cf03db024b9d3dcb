package statuspage

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
)

// DefaultInterval is the default time between two updates.
const DefaultInterval = time.Second

// ErrNoTopology is returned by New for a Config without a topology.
var ErrNoTopology = errors.New("statuspage: no topology")

// Config configures a Server. Only Topology is required.
type Config struct {
	// Topology is the run the page shows.
	Topology topology.View
	// Title heads the page, such as the command line.
	Title string
	// Tap, if set, gives the per-series plots and the dead-letter counts;
	// the server makes it sample while a client is connected and ticks it
	// at every update.
	Tap *Tap
	// Metrics, if set, is served at /metrics.
	Metrics prometheus.Gatherer
	// Replay, if set, returns the progress of the replay that is the
	// run's clock, which the page shows and /status serves. It is called
	// at every update, while the replay runs.
	Replay func() ReplayStatus
	// Control, if set, serves POST /speed, /pause and /resume (the
	// handler of connectors/replay); the page then shows its buttons.
	// Without it the server changes nothing. The server passes requests
	// to it as they come: where a browser can reach the page, guard it
	// against other origins and foreign Host names (httpguard.Protect).
	Control http.Handler
	// Instances, if set, returns the instances of the component named,
	// a source or a bolt of Topology, as far as they are made: the page
	// shows a panel of each that is a Reporter. It is called at every
	// update, for every component, so that instances made as the run
	// goes appear when they are (pipeline.Built.Instances is one); nil
	// entries are instances not made yet.
	Instances func(component string) []any
	// Clock is the run's stream clock, against which watermark lag is
	// measured. Defaults to the topology's (Topology.StreamTime) while it
	// runs, else the wall clock.
	Clock streamclock.Clock
	// Wall gives the time of updates and their ticker. Defaults to
	// streamclock.System.
	Wall streamclock.Wall
	// Interval is the time between two updates. Defaults to
	// DefaultInterval.
	Interval time.Duration
	// Logger receives the server's logs. Defaults to discarding them.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Wall == nil {
		c.Wall = streamclock.System{}
	}
	if c.Clock == nil {
		wall, topo := c.Wall, c.Topology
		c.Clock = streamclock.Func(func() int64 {
			// A replay's clock stands at MinInt64 before its first particle.
			if t, ok := topo.StreamTime(); ok && t != math.MinInt64 {
				return t
			}
			return wall.Now().UnixNano()
		})
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

//go:embed assets
var assets embed.FS

// Server serves the status page of one run. It is an http.Handler:
//
//	GET  /            the page (and its scripts under /assets/)
//	GET  /events      server-sent events: a Snapshot as JSON every Interval
//	GET  /snapshot    the latest Snapshot as JSON
//	GET  /metrics     Prometheus metrics, with Config.Metrics
//	GET  /status      the replay's ReplayStatus, with Config.Replay
//	POST /speed, /pause, /resume   with Config.Control
//
// Updates are made by Run; without it, /events sends nothing.
type Server struct {
	cfg   Config
	mux   *http.ServeMux
	graph topology.Graph
	hub   *hub

	mu   sync.Mutex // guards prev
	prev counts
}

var _ http.Handler = (*Server)(nil)

// New returns the server of cfg's run.
func New(cfg Config) (*Server, error) {
	if cfg.Topology == nil {
		return nil, ErrNoTopology
	}
	cfg.setDefaults()
	s := &Server{cfg: cfg, mux: http.NewServeMux(), graph: cfg.Topology.Graph(), hub: newHub()}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("GET /", http.FileServerFS(static))
	s.mux.HandleFunc("GET /events", s.serveEvents)
	s.mux.HandleFunc("GET /snapshot", s.serveSnapshot)
	if cfg.Metrics != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{}))
	}
	if cfg.Replay != nil {
		s.mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, cfg.Replay())
		})
	}
	if cfg.Control != nil {
		for _, p := range []string{"POST /speed", "POST /pause", "POST /resume"} {
			s.mux.Handle(p, cfg.Control)
		}
	}
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Run makes an update every Config.Interval (a second by default) and
// sends it to the clients of /events as a server-sent event until ctx
// ends; then it sends a last one, marked Finished, ends
// their streams and returns nil. Cancel ctx once the run has ended, so
// that the page shows its final figures rather than the last second's.
func (s *Server) Run(ctx context.Context) error {
	tick, stop := s.cfg.Wall.NewTicker(s.cfg.Interval)
	defer stop()
	defer s.hub.close()
	s.update(false)
	for {
		select {
		case <-ctx.Done():
			s.update(true)
			return nil
		case <-tick:
			s.update(false)
		}
	}
}

// update makes a snapshot, the last one if final, and sends it to the
// clients, if any.
func (s *Server) update(final bool) {
	snap := s.snapshot()
	snap.Finished = final
	if s.cfg.Tap != nil {
		s.cfg.Tap.Tick()
	}
	b, err := json.Marshal(snap)
	if err != nil {
		// Every type in a Snapshot encodes; this is a bug.
		s.cfg.Logger.Error("status page: encode snapshot", "err", err)
		return
	}
	s.hub.publish(b)
}

// snapshot reads the run's figures now, and the rates since the last
// snapshot.
func (s *Server) snapshot() Snapshot {
	now := s.cfg.Wall.Now()
	stream := s.cfg.Clock.Now()
	t := s.cfg.Topology
	snap := Snapshot{
		Title: s.cfg.Title, Wall: now.UnixMilli(), Stream: stream / 1e6,
		Control: s.cfg.Control != nil, Edges: s.graph.Edges, PendingTrees: t.AckStats().Pending, MaxPending: t.AckStats().MaxPending,
	}
	if cs := t.Checkpoints(); cs.Enabled {
		snap.Checkpoint = &CheckpointSnapshot{ID: cs.Last, DurationMS: cs.Duration.Milliseconds(), Bytes: cs.Bytes, Completed: cs.Completed, Failed: cs.Failed}
		if !cs.LastAt.IsZero() {
			snap.Checkpoint.At = cs.LastAt.UnixMilli()
		}
	}
	if s.cfg.Tap != nil {
		tap := s.cfg.Tap.Snapshot()
		snap.Tap = &tap
	}
	// next is filled before it is published as prev: a snapshot served
	// to a request may run alongside Run's.
	next := counts{at: now, in: map[string]uint64{}, out: map[string]uint64{}}
	s.mu.Lock()
	prev := s.prev
	s.mu.Unlock()
	d := now.Sub(prev.at)
	for _, c := range s.graph.Components {
		cs := componentSnapshot(c, t.Stats(c.Name), stream)
		next.in[c.Name], next.out[c.Name] = cs.In, cs.Out
		if !prev.at.IsZero() {
			cs.RateIn, cs.RateOut = rate(cs.In, prev.in[c.Name], d), rate(cs.Out, prev.out[c.Name], d)
		}
		if snap.Tap != nil {
			cs.DeadLetters = snap.Tap.DeadLetters[c.Name]
		}
		snap.Components = append(snap.Components, cs)
	}
	if s.cfg.Replay != nil {
		st := s.cfg.Replay()
		snap.Replay = replaySnapshot(st, prev.position, d)
		next.position = st.Position
	}
	s.mu.Lock()
	s.prev = next
	s.mu.Unlock()
	if s.cfg.Instances != nil {
		for _, c := range s.graph.Components {
			snap.Connectors = append(snap.Connectors, connectorSnapshots(c.Name, s.cfg.Instances(c.Name), now)...)
		}
	}
	return snap
}

// serveSnapshot serves the latest snapshot, or a new one before Run made
// any.
func (s *Server) serveSnapshot(w http.ResponseWriter, _ *http.Request) {
	b := s.hub.newest()
	if b == nil {
		writeJSON(w, s.snapshot())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	// An error here is the client's connection failing; there is no one
	// left to tell.
	_ = json.NewEncoder(w).Encode(v)
}
