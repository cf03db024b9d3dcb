package httpwrite_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// server is a Source running in a topology with acking on, listening on a
// free loopback port, whose particles a bolt collects.
type server struct {
	src  *httpwrite.Source
	url  string
	dead connectortest.DeadLetters
	// gate, when not nil, holds the collecting bolt until closed.
	gate chan struct{}
	// failFirst makes the collecting bolt fail the first attempt of every
	// particle, so that the engine redelivers it.
	failFirst bool
	tried     map[int64]bool
	// maxPending, when not 0, is the topology's acking max_pending: a
	// small one stalls the source as soon as the bolt is held.
	maxPending int

	topo *topology.Topology

	mu  sync.Mutex
	got []particle.Particle

	cancel context.CancelFunc
	done   chan error
}

// buffer releases what arrives once its input is quiet for a moment, and
// passes late particles: these tests are about what is delivered.
var buffer = syncbuffer.Config{IdleTimeout: 100 * time.Millisecond, Late: syncbuffer.LatePass}

// startServer runs a Source for cfg; StateDir and Addr default to a
// temporary directory and a free loopback port.
func startServer(t testing.TB, cfg httpwrite.Config, gate chan struct{}) *server {
	t.Helper()
	return startServerWith(t, cfg, &server{gate: gate})
}

// startServerWith is startServer with the bolt's behaviour set in s.
func startServerWith(t testing.TB, cfg httpwrite.Config, s *server) *server {
	t.Helper()
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join(t.TempDir(), "state")
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	src, err := httpwrite.NewSource(cfg)
	require.NoError(t, err)
	s.src, s.done, s.tried = src, make(chan error, 1), map[int64]bool{}
	topo, err := topology.New(topology.Config{
		Logger:      slog.New(slog.DiscardHandler),
		Acking:      topology.AckingConfig{Enabled: true, RetryInitialInterval: time.Millisecond, MaxPending: s.maxPending},
		DeadLetters: &s.dead,
	})
	require.NoError(t, err)
	topo.AddSource("http", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("collect", operation.Stateless(operation.Func(s.collect)), topology.BoltConfig{Buffer: buffer}).
		Input("http", topology.Global())
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.topo = cancel, topo
	go func() { s.done <- topo.Run(ctx) }()
	t.Cleanup(func() { s.stop(t) })
	select {
	case <-src.Ready():
	case err := <-s.done:
		t.Fatalf("topology stopped before listening: %v", err)
	}
	s.url = "http://" + src.Addr().String()
	return s
}

func (s *server) collect(ctx context.Context, in particle.Particle, _ operation.Emitter) error {
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failFirst && !s.tried[in.Time] {
		s.tried[in.Time] = true
		return errors.New("the first attempt fails")
	}
	s.got = append(s.got, in)
	return nil
}

// particles returns what the bolt collected so far.
func (s *server) particles() []particle.Particle {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// stop ends the topology and closes the source.
func (s *server) stop(t testing.TB) {
	t.Helper()
	if s.cancel == nil {
		return
	}
	if s.gate != nil {
		select {
		case <-s.gate:
		default:
			close(s.gate)
		}
	}
	s.cancel()
	s.cancel = nil
	err := <-s.done
	require.NoError(t, s.src.Close())
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("topology: %v", err)
	}
}

// post sends a request and returns its status, headers and body.
func post(t testing.TB, method, url string, hdr http.Header, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}
