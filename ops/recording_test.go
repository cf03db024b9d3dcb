package ops_test

import (
	"context"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/internal/optest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/ops"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

const recording = "../testdata/library1-r1.lp"

func statsFactory(t *testing.T, cfg ops.StatsConfig) operation.Factory {
	_, err := ops.NewStats(cfg)
	require.NoError(t, err)
	return func() operation.Operation { return optest.Must(ops.NewStats(cfg)) }
}

// Windows over the replayed recording, computed by the engine with acking
// on and two instances grouped by node, agree with a plain computation of
// the same aggregates.
func TestWindowsOverRecordingMatchPlainComputation(t *testing.T) {
	const size = 10 * time.Minute
	cfg := ops.StatsConfig{Size: size, By: []string{"node"}, Fields: []string{"temperature", "humidity"},
		Aggregates: []string{"mean", "min", "max", "count", "sum", "stddev", "p95"}}
	topo, err := topology.New(topology.Config{
		Replay: true,
		Acking: topology.AckingConfig{Enabled: true, HardTimeout: time.Hour},
	})
	require.NoError(t, err)
	topo.AddSource("wsn", topology.Single(&file.Source{Paths: []string{recording}, Track: true}), topology.SourceConfig{})
	topo.AddBolt("stats", statsFactory(t, cfg), topology.BoltConfig{Parallelism: 2, Buffer: syncbuffer.Config{Window: 5 * time.Second, FutureBound: -1}}).
		Input("wsn", topology.Fields("node"))
	sink := &optest.Gather{}
	// Windows emit rarely: an idle timeout shorter than the window would
	// declare the quiet instance idle and make its results late.
	topo.AddBolt("out", operation.Stateless(sink), topology.BoltConfig{Buffer: syncbuffer.Config{IdleTimeout: -1}}).Input("stats", topology.Global())
	require.NoError(t, topo.Run(context.Background()))
	assert.Zero(t, topo.Stats("out").Late.Load())

	// The plain computation: values per (window end, node, field).
	type key struct {
		end         int64
		node, field string
	}
	values := map[key][]float64{}
	in := optest.ReadRecording(t, recording)
	for _, p := range in {
		node, _ := p.Tag("node")
		end := (p.Time/int64(size) + 1) * int64(size)
		for _, f := range cfg.Fields {
			if v, ok := p.Field(f); ok {
				x, _ := v.Number()
				values[key{end, node, f}] = append(values[key{end, node, f}], x)
			}
		}
	}
	checked := 0
	for _, r := range sink.Particles() {
		node, _ := r.Tag("node")
		for _, f := range cfg.Fields {
			vs := values[key{r.Time, node, f}]
			require.NotEmpty(t, vs, "no input for %v", r)
			sum, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
			for _, v := range vs {
				sum += v
				lo, hi = min(lo, v), max(hi, v)
			}
			mean := sum / float64(len(vs))
			sq := 0.0
			for _, v := range vs {
				sq += (v - mean) * (v - mean)
			}
			sorted := append([]float64(nil), vs...)
			sort.Float64s(sorted)
			p95 := sorted[int(math.Ceil(0.95*float64(len(sorted))))-1]
			assert.InDelta(t, mean, optest.Field(t, r, f+"_mean"), 1e-9)
			assert.Equal(t, lo, optest.Field(t, r, f+"_min"))
			assert.Equal(t, hi, optest.Field(t, r, f+"_max"))
			assert.Equal(t, float64(len(vs)), optest.Field(t, r, f+"_count"))
			assert.InDelta(t, sum, optest.Field(t, r, f+"_sum"), 1e-9)
			assert.Equal(t, p95, optest.Field(t, r, f+"_p95"))
			if len(vs) > 1 {
				assert.InDelta(t, math.Sqrt(sq/float64(len(vs)-1)), optest.Field(t, r, f+"_stddev"), 1e-9)
			}
			checked++
		}
	}
	assert.Equal(t, len(values), checked, "every (window, node, field) has exactly one result")
	src := topo.Stats("wsn")
	assert.Equal(t, uint64(len(in)), src.Acked.Load(), "every tree completed once its windows fired")
	assert.Zero(t, src.Failed.Load())
	assert.Zero(t, topo.Stats("stats").Late.Load())
	assert.Zero(t, topo.Stats("out").Late.Load())
}

// pacedSource emits particles paced on a fake wall clock: it advances the
// clock by the event-time gap divided by speed before each one, so no test
// time passes.
type pacedSource struct {
	in    []particle.Particle
	wall  *streamclock.Fake
	speed float64
}

func (s *pacedSource) Run(ctx context.Context, out topology.SourceEmitter) error {
	prev := s.in[0].Time
	for _, p := range s.in {
		s.wall.Advance(time.Duration(float64(p.Time-prev) / s.speed))
		prev = p.Time
		if err := out.Emit(p); err != nil {
			return err
		}
	}
	return nil
}

// The recording fed live at 1x on an injectable clock and replayed at
// 1000x gives the same windowed results: windows close on event time, not
// on the clock.
func TestLiveAndReplayGiveSameWindows(t *testing.T) {
	in := optest.ReadRecording(t, recording)
	run := func(live bool) []string {
		cfg := topology.Config{Replay: true}
		wall := streamclock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		speed := 1000.0
		if live {
			wall = streamclock.NewFake(in[0].EventTime())
			cfg.Replay, speed = false, 1
		}
		cfg.Wall = wall
		topo, err := topology.New(cfg)
		require.NoError(t, err)
		topo.AddSource("wsn", topology.Single(&pacedSource{in: in, wall: wall, speed: speed}), topology.SourceConfig{})
		stats := ops.StatsConfig{Size: 10 * time.Minute, Slide: 5 * time.Minute, By: []string{"node"}, Fields: []string{"temperature"}, Aggregates: []string{"mean", "count", "p50"}}
		// The source drives the fake clock and stops it when it ends, while
		// bolts may still lag behind: idle detection and the future bound,
		// both measured on that clock, would only add noise here.
		buf := syncbuffer.Config{Window: 5 * time.Second, IdleTimeout: -1, FutureBound: -1}
		topo.AddBolt("stats", statsFactory(t, stats), topology.BoltConfig{Parallelism: 2, Buffer: buf}).Input("wsn", topology.Fields("node"))
		align := func() operation.Operation {
			return optest.Must(ops.NewAlign(ops.AlignConfig{Bucket: 10 * time.Minute, Sensor: []string{"node"}, Fields: []string{"temperature"}}))
		}
		topo.AddBolt("align", align, topology.BoltConfig{Buffer: buf}).Input("wsn", topology.Global())
		sink := &optest.Gather{}
		// Windows emit rarely: an idle timeout shorter than the window would
		// declare the quiet instance idle and make its results late.
		topo.AddBolt("out", operation.Stateless(sink), topology.BoltConfig{Buffer: buf}).Input("stats", topology.Global()).Input("align", topology.Global())
		require.NoError(t, topo.Run(context.Background()))
		assert.Zero(t, topo.Stats("stats").Late.Load())
		assert.Zero(t, topo.Stats("out").Late.Load())
		return sink.Lines(t)
	}
	live, replay := run(true), run(false)
	require.NotEmpty(t, live)
	if !assert.Equal(t, len(live), len(replay)) {
		return
	}
	for i := range live {
		require.Equal(t, live[i], replay[i])
	}
	t.Logf("%d windowed results, identical live and at 1000x", len(live))
}
