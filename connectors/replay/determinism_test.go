package replay_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/ops"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

const shipped = "../../testdata/library1-r1.lp"

// jittered writes the shipped recording with every timestamp moved by up
// to 4 s either way: out of order, some of it beyond a 5 s window.
func jittered(t *testing.T) string {
	in, err := os.ReadFile(shipped)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	var out bytes.Buffer
	for line := range bytes.Lines(in) {
		line = bytes.TrimRight(line, "\n")
		i := bytes.LastIndexByte(line, ' ')
		ts, err := strconv.ParseInt(string(line[i+1:]), 10, 64)
		require.NoError(t, err)
		ts += rng.Int64N(int64(8*time.Second)) - int64(4*time.Second)
		fmt.Fprintf(&out, "%s %d\n", line[:i], ts)
	}
	path := filepath.Join(t.TempDir(), "jittered.lp")
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
	return path
}

// lines gathers what reaches a sink as line protocol.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, err := particle.AppendLineProtocol(l.buf.AvailableBuffer(), &in, particle.Nanosecond)
	l.buf.Write(b)
	return err
}

// replayRun is one replay of the determinism test: a speed, a wall clock,
// and what happens to the source while it runs.
type replayRun struct {
	name  string
	speed replay.Speed
	// wall, if set, paces the replay; it may change the source through
	// the pointer it is given.
	wall func(src **replay.Source) replay.Wall
}

// output replays path through a three-stage pipeline (per-node minute
// statistics on three instances, ten-minute statistics of those, a sink
// of both) and returns everything the sinks wrote, with the late count.
func (r replayRun) output(t *testing.T, path string) (string, uint64) {
	var src *replay.Source
	cfg := replay.Config{Inputs: []replay.Input{{Path: path}}, Speed: r.speed}
	if r.wall != nil {
		cfg.Wall = r.wall(&src)
	}
	src, err := replay.New(cfg)
	require.NoError(t, err)
	topo, err := topology.New(topology.Config{Replay: true, BatchSize: 64})
	require.NoError(t, err)
	topo.AddSource("wsn", topology.Single(src), topology.SourceConfig{})
	stats := func(cfg ops.StatsConfig) operation.Factory {
		return func() operation.Operation {
			op, err := ops.NewStats(cfg)
			require.NoError(t, err)
			return op
		}
	}
	topo.AddBolt("minute", stats(ops.StatsConfig{Size: time.Minute, By: []string{"node"}, Fields: []string{"temperature", "humidity"},
		Aggregates: []string{"mean", "count", "max", "p50", "stddev"}}), topology.BoltConfig{Parallelism: 3, Buffer: syncbuffer.Config{Window: 5 * time.Second}}).
		Input("wsn", topology.Fields("node"))
	topo.AddBolt("tenminutes", stats(ops.StatsConfig{Size: 10 * time.Minute, Fields: []string{"temperature_mean"},
		Aggregates: []string{"mean", "min", "max", "count"}}), topology.BoltConfig{}).Input("minute", topology.Global())
	var minute, ten lines
	topo.AddBolt("minute-out", operation.Stateless(&minute), topology.BoltConfig{}).Input("minute", topology.Global())
	topo.AddBolt("ten-out", operation.Stateless(&ten), topology.BoltConfig{}).Input("tenminutes", topology.Global())
	require.NoError(t, topo.Run(context.Background()))
	for _, c := range []string{"tenminutes", "minute-out", "ten-out"} {
		require.Zero(t, topo.Stats(c).Late.Load(), "late results at %s", c)
	}
	return minute.buf.String() + ten.buf.String(), topo.Stats("minute").Late.Load()
}

// A replay's output is a function of the recording: byte for byte the same
// unpaced, paced at several speeds with a wall clock that fires late, and
// with the speed changed and the replay paused while it runs.
func TestSameOutputAtEverySpeed(t *testing.T) {
	lateWall := func(seed uint64) func(**replay.Source) replay.Wall {
		return func(**replay.Source) replay.Wall {
			w := newFakeWall()
			rng := rand.New(rand.NewPCG(seed, 0))
			w.arm = func(time.Time) (time.Duration, bool) {
				return time.Duration(rng.IntN(int(50 * time.Millisecond))), true
			}
			return w
		}
	}
	changing := func(src **replay.Source) replay.Wall {
		w := newFakeWall()
		var resumed sync.WaitGroup
		w.arm = func(time.Time) (time.Duration, bool) {
			switch w.arms {
			case 100:
				require.NoError(t, (*src).SetSpeed(10))
				return 0, false
			case 300:
				(*src).Pause()
				resumed.Go(func() {
					time.Sleep(5 * time.Millisecond)
					(*src).Resume()
				})
				return 0, false
			case 500:
				require.NoError(t, (*src).SetSpeed(replay.Max))
				return 0, false
			}
			return time.Millisecond, true
		}
		t.Cleanup(resumed.Wait)
		return w
	}
	runs := []replayRun{
		{name: "unpaced", speed: replay.Max},
		{name: "1000x", speed: 1000, wall: lateWall(1)},
		{name: "100x", speed: 100, wall: lateWall(2)},
		{name: "changes and a pause", speed: 1000, wall: changing},
	}
	for _, rec := range []struct{ name, path string }{{"shipped", shipped}, {"jittered", jittered(t)}} {
		t.Run(rec.name, func(t *testing.T) {
			want, late := runs[0].output(t, rec.path)
			require.NotEmpty(t, want)
			for _, r := range runs[1:] {
				got, gotLate := r.output(t, rec.path)
				require.Equal(t, late, gotLate, "%s: late particles", r.name)
				if got != want {
					t.Fatalf("%s: output differs from the unpaced replay's:\n%s", r.name, firstDifference(want, got))
				}
			}
			t.Logf("%d bytes, %d late, identical in %d runs", len(want), late, len(runs))
		})
	}
}

// firstDifference shows the first line where a and b differ.
func firstDifference(a, b string) string {
	sa, sb := bufio.NewScanner(bytes.NewBufferString(a)), bufio.NewScanner(bytes.NewBufferString(b))
	for n := 1; ; n++ {
		okA, okB := sa.Scan(), sb.Scan()
		if !okA && !okB {
			return "no difference"
		}
		if sa.Text() != sb.Text() || okA != okB {
			return fmt.Sprintf("line %d:\n  want %s\n  got  %s", n, sa.Text(), sb.Text())
		}
	}
}
