package replay_test

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// writeRecording writes n readings of 10 sensors, step apart, as line
// protocol and returns its path and size. With jitter, each reading is
// delayed by up to jitter (uniformly, from a fixed seed) and the file
// holds them in the order they would arrive, their timestamps unchanged.
func writeRecording(b *testing.B, n int, step, jitter time.Duration) (string, int64) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "rec.lp")
	f, err := os.Create(path)
	require.NoError(b, err)
	w := bufio.NewWriterSize(f, 1<<20)
	order := make([]int, n)
	arrival := make([]int64, n)
	rng := rand.New(rand.NewPCG(30, 2))
	for i := range n {
		order[i] = i
		arrival[i] = int64(i) * int64(step)
		if jitter > 0 {
			arrival[i] += rng.Int64N(int64(jitter))
		}
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(arrival[i], arrival[j]) })
	for _, i := range order {
		fmt.Fprintf(w, "wsn,node=%d seq=%di,temperature=%d.%d,humidity=51.5 %d\n", i%10, i, 20+i%5, i%10, t0+int64(i)*int64(step))
	}
	require.NoError(b, w.Flush())
	require.NoError(b, f.Close())
	st, err := os.Stat(path)
	require.NoError(b, err)
	return path, st.Size()
}

// BenchmarkReplay replays a line-protocol file of a million readings
// unpaced through a topology: replay source, then the synchronization
// buffer of a sink bolt writing line protocol to io.Discard.
func BenchmarkReplay(b *testing.B) {
	benchReplay(b, func(src *replay.Source) int {
		topo, err := topology.New(topology.Config{Replay: true})
		require.NoError(b, err)
		topo.AddSource("replay", topology.Single(src), topology.SourceConfig{})
		topo.AddBolt("sink", operation.Stateless(file.NewSink(io.Discard, particle.Nanosecond)), topology.BoltConfig{
			Buffer: syncbuffer.Config{FutureBound: -1},
		}).Input("replay", topology.Global())
		require.NoError(b, topo.Run(context.Background()))
		return int(topo.Stats("sink").Processed.Load())
	})
}

// BenchmarkReplayDisorder replays, as BenchmarkReplay, a million
// readings 1 ms apart whose order is jittered: each delayed by up to the
// sub-benchmark's disorder, the file holding them in arrival order. The
// sink's window is the disorder, so that none is late and the buffer
// holds about a disorder's worth of readings (300,000 at 5m). Its
// particles/s are docs/figures/throughput-disorder.svg (see
// docs/figures.md to regenerate it).
func BenchmarkReplayDisorder(b *testing.B) {
	const n = 1_000_000
	for _, c := range []struct {
		name     string
		disorder time.Duration
	}{{"0", 0}, {"1s", time.Second}, {"10s", 10 * time.Second}, {"1m", time.Minute}, {"5m", 5 * time.Minute}} {
		disorder := c.disorder
		b.Run("disorder="+c.name, func(b *testing.B) {
			path, size := writeRecording(b, n, time.Millisecond, disorder)
			b.ReportAllocs()
			b.SetBytes(size)
			var total time.Duration
			for b.Loop() {
				src, err := replay.New(replay.Config{Inputs: []replay.Input{{Path: path}}, Speed: replay.Max})
				require.NoError(b, err)
				topo, err := topology.New(topology.Config{Replay: true})
				require.NoError(b, err)
				topo.AddSource("replay", topology.Single(src), topology.SourceConfig{})
				topo.AddBolt("sink", operation.Stateless(file.NewSink(io.Discard, particle.Nanosecond)), topology.BoltConfig{
					Buffer: syncbuffer.Config{Window: disorder, FutureBound: -1},
				}).Input("replay", topology.Global())
				start := time.Now()
				require.NoError(b, topo.Run(context.Background()))
				total += time.Since(start)
				s := topo.Stats("sink")
				require.Equal(b, uint64(n), s.Processed.Load())
				require.Zero(b, s.Late.Load())
			}
			b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "particles/s")
		})
	}
}

// BenchmarkReplaySource replays the file of BenchmarkReplay unpaced into
// an emitter that only counts: the source's own rate (reading, decoding,
// merging, judging), without a topology after it.
func BenchmarkReplaySource(b *testing.B) {
	benchReplay(b, func(src *replay.Source) int {
		out := &recorder{discard: true}
		require.NoError(b, src.Run(context.Background(), out))
		return out.n
	})
}

// benchReplay replays a recording of a million readings unpaced with run,
// which returns how many particles came out, and reports the rate. Each
// iteration also reads the file with a file.Reader, one record after the
// other, timed apart: "vs-reader" is the replay's rate over the Reader's,
// measured under the same machine load.
func benchReplay(b *testing.B, run func(src *replay.Source) int) {
	const n = 1_000_000
	path, size := writeRecording(b, n, time.Millisecond, 0)
	b.ReportAllocs()
	b.SetBytes(size)
	var total, reading time.Duration
	for b.Loop() {
		src, err := replay.New(replay.Config{Inputs: []replay.Input{{Path: path}}, Speed: replay.Max})
		require.NoError(b, err)
		start := time.Now()
		got := run(src)
		total += time.Since(start)
		require.Equal(b, n, got)
		b.StopTimer()
		start = time.Now()
		require.Equal(b, n, readAll(b, path))
		reading += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "particles/s")
	b.ReportMetric(reading.Seconds()/total.Seconds(), "vs-reader")
}

// readAll reads the records of path with a file.Reader and returns how
// many there were.
func readAll(b *testing.B, path string) int {
	r, err := file.OpenReader(path, file.Format{})
	require.NoError(b, err)
	defer r.Close()
	n := 0
	var p particle.Particle
	for {
		err := r.Read(&p)
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
}

// arrivals is a sink operation that notes when each particle arrives.
type arrivals struct {
	mu    sync.Mutex
	times []int64
	at    []time.Time
}

func (a *arrivals) Process(_ context.Context, p particle.Particle, _ operation.Emitter) error {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.times = append(a.times, p.Time)
	a.at = append(a.at, now)
	return nil
}

// BenchmarkPacedAccuracy replays a 300 s recording (100 readings a
// second) at speed 100 on the real clock through a topology, and reports
// the wall time it took, its error against the 3 s it should take, and
// the 99th percentile of how late the readings reached the sink against
// their schedule (the first arrival plus the event-time offset divided by
// the speed). Run it with -benchtime=1x: one replay takes 3 s.
func BenchmarkPacedAccuracy(b *testing.B) {
	const (
		span  = 300 * time.Second
		step  = 10 * time.Millisecond
		speed = 100
	)
	n := int(span/step) + 1
	path, _ := writeRecording(b, n, step, 0)
	var wall, p99, worst time.Duration
	for b.Loop() {
		src, err := replay.New(replay.Config{Inputs: []replay.Input{{Path: path}}, Speed: speed})
		require.NoError(b, err)
		topo, err := topology.New(topology.Config{Replay: true})
		require.NoError(b, err)
		sink := &arrivals{}
		topo.AddSource("replay", topology.Single(src), topology.SourceConfig{})
		topo.AddBolt("sink", operation.Stateless(sink), topology.BoltConfig{
			Buffer: syncbuffer.Config{FutureBound: -1},
		}).Input("replay", topology.Global())
		require.NoError(b, topo.Run(context.Background()))
		require.Len(b, sink.at, n)
		w0 := sink.at[0]
		lateness := make([]time.Duration, n)
		for i, at := range sink.at {
			lateness[i] = at.Sub(w0.Add(time.Duration(sink.times[i]-sink.times[0]) / speed))
		}
		slices.Sort(lateness)
		wall = sink.at[n-1].Sub(w0)
		p99 = lateness[n*99/100]
		worst = lateness[n-1]
	}
	want := span / speed
	b.ReportMetric(wall.Seconds(), "wall-s")
	b.ReportMetric(100*(wall-want).Seconds()/want.Seconds(), "error-%")
	b.ReportMetric(float64(p99)/1e6, "p99-late-ms")
	b.ReportMetric(float64(worst)/1e6, "max-late-ms")
}
