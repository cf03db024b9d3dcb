package replay_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

func TestHandler(t *testing.T) {
	src, err := replay.New(replay.Config{Inputs: []replay.Input{{Path: "x.lp"}}, Speed: 10})
	require.NoError(t, err)
	h := replay.Handler(src)
	do := func(method, target string) (int, replay.Status, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
		var st replay.Status
		body := w.Body.String()
		if w.Code == http.StatusOK {
			require.Equal(t, "application/json", w.Header().Get("Content-Type"))
			require.NoError(t, json.Unmarshal([]byte(body), &st), body)
		}
		return w.Code, st, body
	}
	code, st, body := do("GET", "/status")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, replay.Speed(10), st.Speed)
	assert.Contains(t, body, `"speed":"10x"`)

	for _, tc := range []struct {
		target string
		want   replay.Speed
	}{{"/speed?factor=100", 100}, {"/speed?factor=0.5x", 0.5}, {"/speed?factor=max", replay.Max}} {
		code, st, _ := do("POST", tc.target)
		require.Equal(t, http.StatusOK, code, tc.target)
		assert.Equal(t, tc.want, st.Speed, tc.target)
		assert.Equal(t, tc.want, src.Status().Speed, tc.target)
	}
	code, _, body = do("POST", "/speed?factor=99999")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "replay: invalid speed")
	code, _, _ = do("POST", "/speed")
	assert.Equal(t, http.StatusBadRequest, code)

	code, st, _ = do("POST", "/pause")
	require.Equal(t, http.StatusOK, code)
	assert.True(t, st.Paused)
	code, st, _ = do("POST", "/resume")
	require.Equal(t, http.StatusOK, code)
	assert.False(t, st.Paused)

	code, _, _ = do("GET", "/pause")
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	code, _, _ = do("GET", "/nothing")
	assert.Equal(t, http.StatusNotFound, code)
}

// speeds is an operation that records the speed changes it sees.
type speeds struct {
	mu      sync.Mutex
	changes []metaparticle.SpeedChange
	n       int
}

func (s *speeds) Process(context.Context, particle.Particle, operation.Emitter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return nil
}

func (s *speeds) HandleMeta(_ context.Context, p particle.Particle, _ operation.Emitter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc, ok := p.Meta.(metaparticle.SpeedChange); ok {
		s.changes = append(s.changes, sc)
	}
	return nil
}

// TestSpeedChangesReachBolts replays through a topology on a fake clock
// and checks that every change made while the replay runs reaches every
// instance of the bolt, once each.
func TestSpeedChangesReachBolts(t *testing.T) {
	times := regular(200, t0, time.Second)
	path := writeLP(t, t.TempDir(), "a.lp", times)
	w := newFakeWall()
	src, err := replay.New(replay.Config{Inputs: []replay.Input{{Path: path}}, Speed: 10, Wall: w})
	require.NoError(t, err)
	arms := 0
	w.arm = func(time.Time) (time.Duration, bool) {
		arms++
		switch arms {
		case 50:
			require.NoError(t, src.SetSpeed(1000))
			return 0, false
		case 120:
			require.NoError(t, src.SetSpeed(replay.Max))
			return 0, false
		}
		return 0, true
	}
	topo, err := topology.New(topology.Config{Replay: true, Wall: w.Fake})
	require.NoError(t, err)
	var ops []*speeds
	var mu sync.Mutex
	topo.AddSource("replay", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("sink", func() operation.Operation {
		mu.Lock()
		defer mu.Unlock()
		op := &speeds{}
		ops = append(ops, op)
		return op
	}, topology.BoltConfig{Parallelism: 2, Buffer: syncbuffer.Config{FutureBound: -1}}).Input("replay", topology.Shuffle())
	require.NoError(t, topo.Run(context.Background()))
	require.Len(t, ops, 2)
	total := 0
	for _, op := range ops {
		assert.Equal(t, []metaparticle.SpeedChange{{Speed: 10}, {Speed: 1000}, {Speed: float64(replay.Max)}}, op.changes)
		total += op.n
	}
	assert.Equal(t, len(times), total)
	assert.Zero(t, topo.Stats("sink").Late.Load())
}

func TestConfigValidation(t *testing.T) {
	for name, cfg := range map[string]replay.Config{
		"no inputs":    {},
		"bad speed":    {Inputs: []replay.Input{{Path: "a"}}, Speed: 1e6},
		"empty path":   {Inputs: []replay.Input{{}}},
		"empty range":  {Inputs: []replay.Input{{Path: "a"}}, From: time.Unix(10, 0), To: time.Unix(10, 0)},
		"unknown kind": {Inputs: []replay.Input{{Path: "a", Format: &fileFormatBad}}},
	} {
		_, err := replay.New(cfg)
		assert.Error(t, err, name)
	}
	_, err := replay.New(replay.Config{Inputs: []replay.Input{{Path: "a"}}})
	assert.NoError(t, err)
	src, err := replay.New(replay.Config{Inputs: []replay.Input{{Path: "/nonexistent/a.lp"}}, Speed: replay.Max})
	require.NoError(t, err)
	err = src.Run(context.Background(), &recorder{wall: newFakeWall()})
	assert.ErrorContains(t, err, "/nonexistent/a.lp")
	assert.True(t, strings.HasPrefix(err.Error(), "file: "))
}

var fileFormatBad = file.Format{Syntax: 7}
