package topology_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/checkpoint"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// A window that holds a hundred times more inputs than a source may have
// pending completes: its inputs are acknowledged by checkpoints, not when
// it fires, and its result is the one a run without checkpoints gives.
func TestCheckpointsAcknowledgeWhatAWindowHolds(t *testing.T) {
	const n, maxPending = 20000, 200
	run := func(store checkpoint.Store) ([]string, *trackedSource) {
		src := valuedSource{newTrackedSource(n)}
		cfg := topology.Config{Replay: true}
		cfg.Acking.Enabled, cfg.Acking.MaxPending = true, maxPending
		cfg.Checkpoints.Store, cfg.Checkpoints.Interval = store, time.Hour
		topo := newTopology(t, cfg)
		topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
		count := func() operation.Operation {
			// One window over the whole run: every input stays in it
			// until the end of the stream.
			return operation.Aggregate(operation.Tumbling(time.Hour), nil, sumAgg{})
		}
		topo.AddBolt("window", count, topology.BoltConfig{}).Input("src", topology.Global())
		var out gatherLines
		topo.AddBolt("out", operation.Stateless(&out), topology.BoltConfig{}).Input("window", topology.Global())
		require.NoError(t, topo.Run(context.Background()))
		return out.lines, src.trackedSource
	}
	store, err := checkpoint.OpenDir(t.TempDir())
	require.NoError(t, err)
	lines, src := run(store)
	src.assertEachEndedOnce(t)
	require.Equal(t, []string{fmt.Sprintf("sum n=%di,sum=%di 3600\n", n, n)}, lines)
	ids, err := store.Checkpoints(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, ids, "the source waited for checkpoints, which completed")
}

// valuedSource is a trackedSource whose readings have a value of 1.
type valuedSource struct{ *trackedSource }

func (s valuedSource) reading(i uint64) particle.Particle {
	p := s.trackedSource.reading(i)
	p.Fields = []particle.Field{{Key: "v", Value: particle.Int(1)}}
	return p
}

func (s valuedSource) Run(ctx context.Context, out topology.SourceEmitter) error {
	for i := uint64(1); i <= uint64(s.n); i++ {
		if err := out.EmitTracked(s.reading(i), i); err != nil {
			return err
		}
	}
	return nil
}

func (s valuedSource) Redeliver(id uint64) (particle.Particle, error) { return s.reading(id), nil }

// stoppableSource emits its readings, then, if stop is set, waits until
// its run is stopped; a run of it started again emits them all again,
// the engine dropping those its checkpoint covers.
type stoppableSource struct {
	readings []reading
	stopAt   int
	reached  chan struct{}
}

func (s *stoppableSource) Run(ctx context.Context, out topology.SourceEmitter) error {
	for i, r := range s.readings {
		if i == s.stopAt {
			if err := out.Flush(); err != nil {
				return err
			}
			close(s.reached)
			<-ctx.Done()
			return nil
		}
		if err := out.Emit(r.particle()); err != nil {
			return err
		}
	}
	return nil
}

// threeKeys returns 300 readings of keys a, b and c, three a second.
func threeKeys() []reading {
	var readings []reading
	for i := range 300 {
		readings = append(readings, reading{t: int64(1000 + i/3), key: string(rune('a' + i%3)), value: int64(i)})
	}
	return readings
}

// windowed returns a topology of src → per-key 30 s windows (par
// instances) → out, taking checkpoints into store (none if nil), with cfg's
// other settings.
func windowed(t *testing.T, cfg topology.Config, store checkpoint.Store, par int, src topology.Source, out *gatherLines) *topology.Topology {
	cfg.Replay = true
	cfg.Checkpoints.Store, cfg.Checkpoints.Interval = store, time.Hour
	topo := newTopology(t, cfg)
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
	perKey := func() operation.Operation {
		return operation.Aggregate(operation.Tumbling(30*time.Second), operation.ByTags("k"), sumAgg{})
	}
	topo.AddBolt("window", perKey, topology.BoltConfig{Parallelism: par}).Input("src", topology.Fields("k"))
	topo.AddBolt("out", operation.Stateless(out), topology.BoltConfig{}).Input("window", topology.Global())
	return topo
}

// Stopping a run that takes checkpoints takes a last one and emits no
// open window as if it were complete; the next run resumes from it and
// gives, in all, what one run without a stop gives.
func TestStopTakesAFinalCheckpointAndResumes(t *testing.T) {
	readings := threeKeys()
	build := func(store checkpoint.Store, src topology.Source, out *gatherLines) *topology.Topology {
		return windowed(t, topology.Config{}, store, 2, src, out)
	}
	var want gatherLines
	require.NoError(t, build(nil, &stoppableSource{readings: readings, stopAt: -1}, &want).Run(context.Background()))
	require.Len(t, want.lines, 3*4)

	store, err := checkpoint.OpenDir(t.TempDir())
	require.NoError(t, err)
	var got gatherLines
	first := &stoppableSource{readings: readings, stopAt: 200, reached: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	topo := build(store, first, &got)
	go func() { done <- topo.Run(ctx) }()
	<-first.reached
	stop()
	require.NoError(t, <-done)
	require.Less(t, len(got.lines), len(want.lines), "open windows were not emitted at the stop")
	require.Equal(t, want.lines[:len(got.lines)], got.lines, "what came out before the stop is complete windows")
	st, err := checkpoint.Latest(context.Background(), store)
	require.NoError(t, err)
	require.NotZero(t, st.ID)

	require.NoError(t, build(store, &stoppableSource{readings: readings, stopAt: -1}, &got).Run(context.Background()))
	require.Equal(t, want.lines, got.lines)
}

// A run whose newest checkpoint another topology took is refused, naming
// the difference.
func TestRestoreRefusesTheCheckpointOfAnotherTopology(t *testing.T) {
	store, err := checkpoint.OpenDir(t.TempDir())
	require.NoError(t, err)
	build := func(par int) *topology.Topology {
		cfg := topology.Config{Replay: true}
		cfg.Checkpoints.Store, cfg.Checkpoints.Interval = store, time.Hour
		topo := newTopology(t, cfg)
		src := &stoppableSource{readings: []reading{{t: 1, key: "a"}, {t: 2, key: "b"}}, stopAt: 1, reached: make(chan struct{})}
		topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
		topo.AddBolt("pass", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
			out.Emit(in)
			return nil
		})), topology.BoltConfig{Parallelism: par}).Input("src", topology.Shuffle())
		return topo
	}
	ctx, stop := context.WithCancel(context.Background())
	stop()
	require.NoError(t, build(1).Run(ctx))
	err = build(2).Run(context.Background())
	require.ErrorIs(t, err, topology.ErrCheckpointMismatch)
	require.True(t, errors.Is(err, topology.ErrCheckpointMismatch))
}

// A damaged newest checkpoint is refused with an error naming it, and the
// one before is restored when the sources can replay from it, as a
// recording can: the output is still what a run never stopped gives.
func TestRestoreFallsBackFromADamagedCheckpoint(t *testing.T) {
	readings := threeKeys()
	dir := t.TempDir()
	store, err := checkpoint.OpenDir(dir)
	require.NoError(t, err)
	build := func(store checkpoint.Store, src topology.Source, out *gatherLines) *topology.Topology {
		return windowed(t, topology.Config{}, store, 1, src, out)
	}
	var want gatherLines
	require.NoError(t, build(nil, &stoppableSource{readings: readings, stopAt: -1}, &want).Run(context.Background()))

	var got gatherLines
	stopAt := func(n int) {
		src := &stoppableSource{readings: readings, stopAt: n, reached: make(chan struct{})}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		topo := build(store, src, &got)
		go func() { done <- topo.Run(ctx) }()
		<-src.reached
		stop()
		require.NoError(t, <-done)
	}
	stopAt(100)
	stopAt(200)
	ids, err := store.Checkpoints(context.Background())
	require.NoError(t, err)
	require.Len(t, ids, 2)
	snaps, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("%020d", ids[0]), "snap-*"))
	require.NoError(t, err)
	require.NotEmpty(t, snaps)
	b, err := os.ReadFile(snaps[0])
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(snaps[0], b, 0o644))

	var logs bytes.Buffer
	cfg := topology.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	topo := windowed(t, cfg, store, 1, &stoppableSource{readings: readings, stopAt: -1}, &got)
	require.NoError(t, topo.Run(context.Background()))
	require.Contains(t, logs.String(), "checkpoint damaged: restoring the one before")
	require.Contains(t, logs.String(), "checksum")
	require.Equal(t, ids[1], topo.Checkpoints().Restored)
	require.Equal(t, want.lines, got.lines)
}

// quietSource emits readings stamped at the wall clock's time, then goes
// quiet until its run is stopped, as a live feed does.
type quietSource struct {
	wall *streamclock.Fake
	n    int
}

func (s quietSource) Run(ctx context.Context, out topology.SourceEmitter) error {
	for i := range s.n {
		p := particle.Particle{Time: s.wall.Now().UnixNano(), Measurement: "m", Fields: []particle.Field{{Key: "v", Value: particle.Int(int64(i))}}}
		if err := out.Emit(p); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// Barriers are no sign of life: a live feed that goes quiet lets event
// time go on while checkpoints are taken, and its last window closes.
func TestCheckpointsLetAQuietFeedCloseItsWindow(t *testing.T) {
	wall := streamclock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := checkpoint.OpenDir(t.TempDir())
	require.NoError(t, err)
	cfg := topology.Config{Wall: wall}
	cfg.Checkpoints.Store, cfg.Checkpoints.Interval = store, 10*time.Millisecond
	topo := newTopology(t, cfg)
	topo.AddSource("feed", topology.Single(quietSource{wall: wall, n: 5}), topology.SourceConfig{})
	window := func() operation.Operation { return operation.Aggregate(operation.Tumbling(time.Second), nil, sumAgg{}) }
	topo.AddBolt("window", window, topology.BoltConfig{Buffer: syncbuffer.Config{IdleTimeout: 100 * time.Millisecond}}).Input("feed", topology.Global())
	var out gatherLines
	topo.AddBolt("out", operation.Stateless(&out), topology.BoltConfig{}).Input("window", topology.Global())
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- topo.Run(ctx) }()
	stopClock := advance(wall, time.Millisecond)
	require.Eventually(t, func() bool {
		out.mu.Lock()
		defer out.mu.Unlock()
		return len(out.lines) == 1
	}, 30*time.Second, time.Millisecond, "the quiet feed's window closes")
	require.Positive(t, topo.Checkpoints().Completed, "checkpoints were taken meanwhile")
	stop()
	stopClock()
	require.NoError(t, <-done)
	require.Equal(t, []string{"sum n=5i,sum=10i 1767225601\n"}, out.lines)
}

// committingSink counts what it processed; at Committed it records the
// newest complete checkpoint of its store and how many particles the
// snapshots so far held.
type committingSink struct {
	store checkpoint.Store

	mu        sync.Mutex
	processed int
	sealed    int
	commits   []commitSeen
}

// commitSeen is what a committingSink saw at a Committed call.
type commitSeen struct {
	checkpoint uint64
	sealed     int
}

func (s *committingSink) Process(context.Context, particle.Particle, operation.Emitter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.processed++
	return nil
}

func (s *committingSink) Snapshot(w *state.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sealed = s.processed
	w.PutUvarint(uint64(s.processed))
	return nil
}

func (s *committingSink) Restore(r *state.Reader) error {
	s.processed = int(r.ReadUvarint())
	return r.Err()
}

func (s *committingSink) Committed() {
	st, err := checkpoint.Latest(context.Background(), s.store)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.commits = append(s.commits, commitSeen{checkpoint: st.ID, sealed: s.sealed})
	}
}

// An operation.Committer hears of each checkpoint once it is complete,
// after the snapshot it covers, and of no other.
func TestCommitterHearsOfCompleteCheckpoints(t *testing.T) {
	store, err := checkpoint.OpenDir(t.TempDir())
	require.NoError(t, err)
	sink := &committingSink{store: store}
	cfg := topology.Config{Replay: true}
	cfg.Checkpoints.Store, cfg.Checkpoints.Interval = store, time.Hour
	topo := newTopology(t, cfg)
	src := &stoppableSource{readings: threeKeys(), stopAt: 200, reached: make(chan struct{})}
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("out", operation.Stateless(sink), topology.BoltConfig{}).Input("src", topology.Global())
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- topo.Run(ctx) }()
	<-src.reached
	stop() // takes a final checkpoint
	require.NoError(t, <-done)

	st, err := checkpoint.Latest(context.Background(), store)
	require.NoError(t, err)
	require.NotEmpty(t, sink.commits)
	require.Equal(t, st.ID, sink.commits[len(sink.commits)-1].checkpoint, "the last call is for the final checkpoint")
	for i, c := range sink.commits {
		require.NotZero(t, c.checkpoint, "call %d came before any checkpoint was complete", i)
		if i > 0 {
			require.Greater(t, c.checkpoint, sink.commits[i-1].checkpoint, "one call per checkpoint")
		}
	}
	require.Positive(t, sink.processed)
	require.Equal(t, sink.processed, sink.commits[len(sink.commits)-1].sealed, "the final checkpoint holds all the sink processed")
}
