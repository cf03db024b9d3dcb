package stream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/ops"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/stream"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const disordered = "../testdata/library1-disordered.lp"

func recording(t *testing.T) *replay.Source {
	t.Helper()
	src, err := replay.New(replay.Config{Inputs: []replay.Input{{Path: disordered}}, Speed: replay.Max})
	require.NoError(t, err)
	return src
}

// The chain builds the topology one writes by hand, so it gives the same
// bytes: a minute's mean and maximum per node, 5 s of disorder absorbed,
// over the disordered recording, with one and with three instances.
func TestChainMatchesHandWrittenTopology(t *testing.T) {
	for _, parallelism := range []int{1, 3} {
		t.Run(fmt.Sprintf("parallelism=%d", parallelism), func(t *testing.T) {
			var chained bytes.Buffer
			src := recording(t)
			topo, err := stream.From(src).
				OutOfOrder(5*time.Second).
				KeyBy("node").
				Parallelism(parallelism).
				Window(stream.Tumbling(time.Minute), stream.Mean("temperature"), stream.Max("temperature")).
				WriteLines(&chained, particle.Millisecond).
				Build(topology.Config{})
			require.NoError(t, err)
			require.NoError(t, topo.Run(context.Background()))
			late := topo.Stats("window").Late.Load()

			var byHand bytes.Buffer
			src = recording(t)
			hand, err := topology.New(topology.Config{Replay: true, Clock: src})
			require.NoError(t, err)
			stats := ops.StatsConfig{Size: time.Minute, By: []string{"node"}, Fields: []string{"temperature"}, Aggregates: []string{"mean", "max"}}
			hand.AddSource("recording", topology.Single(src), topology.SourceConfig{})
			hand.AddBolt("mean", func() operation.Operation {
				op, err := ops.NewStats(stats)
				require.NoError(t, err)
				return op
			}, topology.BoltConfig{Parallelism: parallelism, Buffer: syncbuffer.Config{Window: 5 * time.Second}}).Input("recording", topology.Fields("node"))
			hand.AddBolt("print", operation.Stateless(file.NewSink(&byHand, particle.Millisecond)), topology.BoltConfig{}).Input("mean", topology.Global())
			require.NoError(t, hand.Run(context.Background()))

			assert.Greater(t, bytes.Count(chained.Bytes(), []byte("\n")), 100)
			assert.Equal(t, byHand.String(), chained.String())
			assert.Equal(t, hand.Stats("mean").Late.Load(), late)
			assert.NotZero(t, late, "the recording has readings more than 5 s late")
		})
	}
}

// Every problem of a chain comes back from Build, once, joined, each
// naming its call; nothing runs.
func TestChainProblemsAreOneError(t *testing.T) {
	_, err := stream.From(nil).
		OutOfOrder(-time.Second).
		Align(time.Minute).
		KeyBy().
		Window(stream.Tumbling(0), stream.Mean("temperature")).
		Window(stream.Tumbling(time.Minute), stream.Mean("temperature"), stream.Max("humidity")).
		Window(stream.Sliding(time.Minute, 2*time.Minute), stream.Percentile(120)).
		Window(stream.Session(time.Minute)).
		ForEach(nil).
		Build(topology.Config{})
	require.Error(t, err)
	assert.ErrorIs(t, err, ops.ErrInvalidConfig)
	assert.Equal(t, `stream: From: nil source
stream: OutOfOrder: negative window -1s
stream: Align: the stream is not keyed: call KeyBy with the tags that name a sensor first
stream: KeyBy: no names
stream: Window: tumbling 0s: ops: invalid config: set exactly one of size, gap and count
stream: Window: tumbling 1m0s: mean of [temperature] and max of [humidity]: the aggregations of a window take the same fields; use a window each
stream: Window: sliding 1m0s every 2m0s: ops: invalid config: slide 2m0s must be in (0, size 1m0s]
unknown aggregate "p120" (known: count, max, mean, median, min, stddev, sum, pNN)
stream: Window: session 1m0s: no aggregation: give Mean, Max, ...
stream: ForEach: nil function
stream: nothing reads the source: add a step or a sink`, err.Error())
}

// A file sink is opened by Build, written in event-time order, and closed
// at the end of the run; a file that cannot be opened is Build's error.
func TestChainToFile(t *testing.T) {
	dir := t.TempDir()
	src := topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		for _, sec := range []int64{2, 1, 3} {
			p := particle.Particle{Time: sec * 1e9, Measurement: "m", Fields: []particle.Field{{Key: "v", Value: particle.Int(sec)}}}
			if err := out.Emit(p); err != nil {
				return err
			}
		}
		return nil
	})
	path := filepath.Join(dir, "out.lp")
	double := operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
		in.Fields = []particle.Field{{Key: "v", Value: particle.Int(in.Fields[0].Value.IntValue() * 2)}}
		out.Emit(in)
		return nil
	}))
	err := stream.From(src).OutOfOrder(time.Second).Process(double).ToFile(path, file.SinkConfig{Precision: particle.Second}).Run(context.Background())
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "m v=2i 1\nm v=4i 2\nm v=6i 3\n", string(got))

	_, err = stream.From(src).ToFile(filepath.Join(dir, "missing", "out.lp"), file.SinkConfig{}).Build(topology.Config{})
	assert.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
}
