// Command httpservice embeds sensorstorm in an HTTP service: it replays a
// recording as fast as possible into a ten-minute mean per node and serves
// the latest aggregates as JSON.
//
//	go run ./examples/httpservice -in testdata/library1-r1.lp -addr :8080
//	curl localhost:8080/latest
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"sync"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/stream"
	"github.com/sensorstorm/sensorstorm/topology"
)

func main() {
	in := flag.String("in", "testdata/library1-r1.lp", "line-protocol recording to replay")
	addr := flag.String("addr", ":8080", "HTTP address")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	latest := NewLatest()
	topo, err := build(*in, latest)
	if err != nil {
		slog.Error("build", "err", err)
		os.Exit(1)
	}
	go func() {
		if err := topo.Run(ctx); err != nil {
			slog.Error("topology", "err", err)
		}
		slog.Info("replay done; still serving", "addr", *addr)
	}()
	srv := &http.Server{Addr: *addr, Handler: latest, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		slog.Error("serve", "err", err)
		os.Exit(1)
	}
}

// build returns the topology: the recording, a ten-minute mean of the
// temperature and humidity per node, and latest as the sink.
func build(path string, latest *Latest) (*topology.Topology, error) {
	return stream.From(&file.Source{Paths: []string{path}}).
		OutOfOrder(5*time.Second).
		KeyBy("node").
		Parallelism(2).
		Window(stream.Tumbling(10*time.Minute), stream.Mean("temperature", "humidity"), stream.Count("temperature", "humidity")).
		ForEach(latest.Add).
		Build(topology.Config{Replay: true}) // a recording: the output is a function of it
}

// Latest is a sink that keeps the latest particle per node, and
// an http.Handler serving them as JSON. It is safe for concurrent use.
type Latest struct {
	mu     sync.RWMutex
	byNode map[string]Aggregate
}

// Aggregate is the JSON form of one node's latest result.
type Aggregate struct {
	Node   string             `json:"node"`
	Time   time.Time          `json:"time"`
	Fields map[string]float64 `json:"fields"`
}

// NewLatest returns an empty Latest.
func NewLatest() *Latest { return &Latest{byNode: map[string]Aggregate{}} }

// Add keeps in if it is its node's latest.
func (l *Latest) Add(in particle.Particle) {
	node, _ := in.Tag("node")
	a := Aggregate{Node: node, Time: in.EventTime(), Fields: map[string]float64{}}
	for _, f := range in.Fields {
		if x, ok := f.Value.Number(); ok {
			a.Fields[f.Key] = x
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.byNode[node]; !ok || !a.Time.Before(old.Time) {
		l.byNode[node] = a
	}
}

// ServeHTTP serves the latest aggregates, sorted by node.
func (l *Latest) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	l.mu.RLock()
	out := make([]Aggregate, 0, len(l.byNode))
	for _, a := range l.byNode {
		out = append(out, a)
	}
	l.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
