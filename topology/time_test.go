package topology_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/ops"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// quiet is a live source: it emits readings, then stays silent without
// ending until released.
func quiet(ps []particle.Particle, release <-chan struct{}) topology.Source {
	return topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		for _, p := range ps {
			if err := out.Emit(p); err != nil {
				return err
			}
		}
		if err := out.Flush(); err != nil {
			return err
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
}

// advanceUntil moves the fake wall in housekeeping steps until cond holds
// or limit has passed, and returns how far it moved.
func advanceUntil(t *testing.T, w *streamclock.Fake, limit time.Duration, cond func() bool) time.Duration {
	t.Helper()
	var moved time.Duration
	for !cond() {
		require.Less(t, moved, limit, "condition not met within %v of wall time", limit)
		w.Advance(topology.DefaultHousekeepingInterval)
		moved += topology.DefaultHousekeepingInterval
		time.Sleep(time.Millisecond) // let the instances take the tick
	}
	return moved
}

// A quiet live feed's last readings and last window come out within the
// window plus the idle timeout: once every input is idle, the watermark
// follows the live clock.
func TestQuietLiveFeedComesOut(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	wall := streamclock.NewFake(start)
	var ps []particle.Particle
	for i := range 100 {
		ps = append(ps, particle.Particle{Time: start.Add(time.Duration(i) * 10 * time.Millisecond).UnixNano(), Measurement: "m",
			Fields: []particle.Field{{Key: "v", Value: particle.Int(1)}}})
	}
	release := make(chan struct{})
	topo := newTopology(t, topology.Config{Wall: wall})
	topo.AddSource("feed", topology.Single(quiet(ps, release)), topology.SourceConfig{})
	const window, idle = 2 * time.Second, 5 * time.Second
	buf := syncbuffer.Config{Window: window, IdleTimeout: idle}
	count := func() operation.Operation {
		op, err := ops.NewStats(ops.StatsConfig{Size: 10 * time.Second, Fields: []string{"v"}, Aggregates: []string{"count"}})
		require.NoError(t, err)
		return op
	}
	var readings, results recorder
	topo.AddBolt("readings", readings.factory(), topology.BoltConfig{Buffer: buf}).Input("feed", topology.Global())
	topo.AddBolt("count", count, topology.BoltConfig{Buffer: buf}).Input("feed", topology.Global())
	topo.AddBolt("results", results.factory(), topology.BoltConfig{Buffer: buf}).Input("count", topology.Global())
	done := make(chan error)
	go func() { done <- topo.Run(context.Background()) }()

	moved := advanceUntil(t, wall, time.Minute, func() bool { return len(readings.all()) == 100 })
	assert.LessOrEqual(t, moved, window+idle+time.Second, "every reading within window + idle timeout")
	moved += advanceUntil(t, wall, time.Minute, func() bool { return len(results.all()) == 1 })
	assert.LessOrEqual(t, moved, 10*time.Second+window+idle+time.Second, "the last window within its end + window + idle timeout")
	assert.Equal(t, int64(100), results.all()[0].Fields[0].Value.IntValue())
	close(release)
	require.NoError(t, <-done)
}

// metaLog is an operation that counts the meta particles it handles.
type metaLog struct {
	operation.Func
	n *atomic.Int64
}

func (m metaLog) HandleMeta(context.Context, particle.Particle, operation.Emitter) error {
	m.n.Add(1)
	return nil
}

// A meta particle older than what was released is handled and forwarded
// at once, exactly once per instance, like one in order.
func TestLateMetaIsHandledOnce(t *testing.T) {
	wait := make(chan struct{})
	topo := newTopology(t, topology.Config{Replay: true})
	topo.AddSource("src", topology.Single(topology.SourceFunc(func(_ context.Context, out topology.SourceEmitter) error {
		for i := range 20 {
			if err := out.Emit(particle.Particle{Time: int64(10 + i), Measurement: "m"}); err != nil {
				return err
			}
		}
		if err := out.Flush(); err != nil {
			return err
		}
		<-wait
		return out.EmitMeta(5, metaparticle.Tick{Domain: metaparticle.EventTime})
	})), topology.SourceConfig{})
	var mid, sink atomic.Int64
	noop := operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error { out.Emit(in); return nil })
	topo.AddBolt("mid", operation.Stateless(metaLog{Func: noop, n: &mid}), topology.BoltConfig{Parallelism: 3}).Input("src", topology.Shuffle())
	topo.AddBolt("sink", operation.Stateless(metaLog{Func: noop, n: &sink}), topology.BoltConfig{}).Input("mid", topology.Global())
	done := make(chan error)
	go func() { done <- topo.Run(context.Background()) }()
	require.Eventually(t, func() bool { return topo.Stats("sink").Processed.Load() >= 10 }, 10*time.Second, time.Millisecond)
	close(wait)
	require.NoError(t, <-done)
	assert.Equal(t, int64(3), mid.Load(), "once per instance")
	assert.Equal(t, int64(1), sink.Load(), "three copies, handled once")
	assert.Equal(t, uint64(2), topo.Stats("sink").Duplicates.Load())
	assert.Zero(t, topo.Stats("mid").Late.Load()+topo.Stats("sink").Late.Load())
}

// A full sync buffer stops taking input, which blocks the sources, and
// says so; once the watermark moves it takes input again.
func TestFullBufferAppliesBackpressure(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	wall := streamclock.NewFake(start)
	var flood []particle.Particle
	for i := range 2000 {
		flood = append(flood, particle.Particle{Time: start.Add(time.Duration(i) * time.Millisecond).UnixNano(), Measurement: "m"})
	}
	release, started := make(chan struct{}), make(chan struct{})
	topo := newTopology(t, topology.Config{Wall: wall, BatchSize: 16, InboxSize: 1})
	topo.AddSource("flood", topology.Single(topology.SourceFunc(func(_ context.Context, out topology.SourceEmitter) error {
		<-started
		for _, p := range flood {
			if err := out.Emit(p); err != nil {
				return err
			}
		}
		return nil
	})), topology.SourceConfig{})
	// The silent input holds the watermark at the start until it is idle.
	topo.AddSource("silent", topology.Single(quiet([]particle.Particle{{Time: start.UnixNano(), Measurement: "m"}}, release)), topology.SourceConfig{})
	const capacity = 100
	var got recorder
	topo.AddBolt("b", got.factory(), topology.BoltConfig{Buffer: syncbuffer.Config{Capacity: capacity, IdleTimeout: 5 * time.Second}}).
		Input("flood", topology.Global()).Input("silent", topology.Global())
	done := make(chan error)
	go func() { done <- topo.Run(context.Background()) }()

	st := topo.Stats("b")
	require.Eventually(t, func() bool { return st.In.Load() == 1 }, 10*time.Second, time.Millisecond, "the silent input's reading")
	close(started)
	require.Eventually(t, func() bool { return st.FullBuffers.Load() == 1 }, 10*time.Second, time.Millisecond)
	assert.Less(t, st.Buffered.Load(), int64(capacity+2*16), "at most a batch beyond the capacity")
	assert.Less(t, st.In.Load(), uint64(len(flood)), "the flood waits")
	advanceUntil(t, wall, time.Minute, func() bool { return st.In.Load() == uint64(len(flood)+1) })
	close(release)
	require.NoError(t, <-done)
	assert.Len(t, got.all(), len(flood)+1)
}

// A window's result crosses three stages as soon as the data has passed
// its end by the first stage's window, well within the sum of the stages'
// windows, without waiting for the end of the stream or an idle timeout:
// every instance forwards its progress (also one that has had no data for
// a while), and the later stages' windows do not delay results that come
// in order, since their upstream promises them.
func TestResultsFlowWithoutEndOfStream(t *testing.T) {
	const (
		w1, w2, w3 = 2 * time.Second, 3 * time.Second, time.Second
		size       = 10 * time.Second
	)
	cut := size + w1 + 200*time.Millisecond
	release := make(chan struct{})
	topo := newTopology(t, topology.Config{Replay: true})
	var ps []particle.Particle
	for at := time.Duration(0); at <= cut; at += 100 * time.Millisecond {
		key := "a"
		if at < 2*time.Second && at%(200*time.Millisecond) == 0 {
			key = "b" // then quiet: its instance has nothing more to say
		}
		ps = append(ps, particle.Particle{Time: int64(at), Measurement: "m", Tags: []particle.Tag{{Key: "k", Value: key}},
			Fields: []particle.Field{{Key: "v", Value: particle.Int(1)}}})
	}
	topo.AddSource("src", topology.Single(quiet(ps, release)), topology.SourceConfig{})
	perKey := func() operation.Operation {
		return operation.Aggregate(operation.Tumbling(size), operation.ByTags("k"), sumAgg{})
	}
	topo.AddBolt("windows", perKey, topology.BoltConfig{Parallelism: 2, Buffer: syncbuffer.Config{Window: w1}}).Input("src", topology.Fields("k"))
	pass := operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error { out.Emit(in); return nil })
	topo.AddBolt("pass", operation.Stateless(pass), topology.BoltConfig{Buffer: syncbuffer.Config{Window: w2}}).Input("windows", topology.Global())
	var got recorder
	topo.AddBolt("sink", got.factory(), topology.BoltConfig{Buffer: syncbuffer.Config{Window: w3}}).Input("pass", topology.Global())
	done := make(chan error)
	go func() { done <- topo.Run(context.Background()) }()

	require.Eventually(t, func() bool { return len(got.all()) == 2 }, 10*time.Second, time.Millisecond,
		"the results of the first window, before the end of the stream")
	for _, p := range got.all() {
		assert.Equal(t, int64(size), p.Time)
	}
	close(release)
	require.NoError(t, <-done)
	assert.Len(t, got.all(), 3, "and key a's second window at the end")
}
