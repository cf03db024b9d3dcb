package operation_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/internal/optest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// tickLog is a per-key operation that records the ticks it is given.
type tickLog struct {
	key string
	log *[]string
}

func (l *tickLog) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	l.key, _ = in.Tag("k")
	return nil
}

func (l *tickLog) OnTick(_ context.Context, now int64, _ operation.Emitter) error {
	*l.log = append(*l.log, fmt.Sprintf("%s@%d", l.key, now/1e9))
	return nil
}

// Eviction on the stream clock counts stream time from a key's latest
// particle, whatever its event time: readings a thousand seconds behind
// the clock stay live for the ttl.
func TestPerKeyEvictsOnStreamClock(t *testing.T) {
	ctx := context.Background()
	k := operation.NewKeyed(operation.ByTags("k"), func() operation.Operation { return &counter{} }, 10*time.Second)
	c := &operation.Collector{}
	require.NoError(t, k.Process(ctx, keyed(1, "a"), c)) // before the first tick: counts from it
	require.NoError(t, k.OnTick(ctx, 1000e9, c))
	require.NoError(t, k.Process(ctx, keyed(2, "b"), c))
	require.NoError(t, k.OnTick(ctx, 1005e9, c))
	require.NoError(t, k.Process(ctx, keyed(3, "a"), c)) // a seen at 1005s now
	require.NoError(t, k.OnTick(ctx, 1009e9, c))
	assert.Equal(t, 2, k.Len(), "nothing idle for 10s of stream time yet")
	require.NoError(t, k.OnTick(ctx, 1010e9, c)) // b, seen at 1000s: evicted
	assert.Equal(t, 1, k.Len())
	require.NoError(t, k.OnTick(ctx, 1015e9, c)) // a, seen at 1005s: evicted
	assert.Zero(t, k.Len())
	var got []string
	for _, p := range c.Emitted {
		key, _ := p.Tag("k")
		got = append(got, fmt.Sprintf("%s=%d", key, p.Fields[0].Value.IntValue()))
	}
	assert.Equal(t, []string{"b=1", "a=2"}, got)
	assert.Equal(t, uint64(2), k.Evicted())
}

// Ticks reach the live operations that want them, least recently used
// first.
func TestPerKeyPassesTicksOn(t *testing.T) {
	ctx := context.Background()
	var log []string
	k := operation.NewKeyed(operation.ByTags("k"), func() operation.Operation { return &tickLog{log: &log} }, 0)
	c := &operation.Collector{}
	for _, key := range []string{"a", "b", "a"} {
		require.NoError(t, k.Process(ctx, keyed(1, key), c))
	}
	require.NoError(t, k.OnTick(ctx, 7e9, c))
	assert.Equal(t, []string{"b@7", "a@7"}, log)
}

// tickRig runs one operation in a live topology whose wall clock is a
// streamclock.Fake, so that the stream clock and the housekeeping ticks
// move only when the test advances the fake.
type tickRig struct {
	t    *testing.T
	wall *streamclock.Fake
	topo *topology.Topology
	in   chan particle.Particle
	sink *optest.Gather
	sent uint64
	done chan error
}

func startTickRig(t *testing.T, op operation.Factory) *tickRig {
	r := &tickRig{t: t, wall: streamclock.NewFake(time.Unix(1_700_000_000, 0)), in: make(chan particle.Particle), sink: &optest.Gather{}, done: make(chan error, 1)}
	topo, err := topology.New(topology.Config{Wall: r.wall})
	require.NoError(t, err)
	topo.AddSource("src", topology.Single(topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		for p := range r.in {
			if err := out.Emit(p); err != nil {
				return err
			}
			if err := out.Flush(); err != nil {
				return err
			}
		}
		return nil
	})), topology.SourceConfig{})
	// The newest reading waits for a later one, or for its input to be
	// idle: let that be one housekeeping interval of stream time.
	idle := topology.BoltConfig{Buffer: syncbuffer.Config{IdleTimeout: topology.DefaultHousekeepingInterval}}
	topo.AddBolt("op", op, idle).Input("src", topology.Global())
	topo.AddBolt("out", operation.Stateless(r.sink), topology.BoltConfig{}).Input("op", topology.Global())
	r.topo = topo
	go func() { r.done <- topo.Run(context.Background()) }()
	return r
}

// at returns p with its time counted from the fake's start.
func (r *tickRig) at(p particle.Particle) particle.Particle {
	p.Time += time.Unix(1_700_000_000, 0).UnixNano()
	return p
}

// emit sends ps and waits until the operation's instance has them; the
// next advance releases them.
func (r *tickRig) emit(ps ...particle.Particle) {
	for _, p := range ps {
		r.in <- p
	}
	r.sent += uint64(len(ps))
	r.wait("the operation's instance to take its input", func() bool { return r.topo.Stats("op").In.Load() == r.sent })
}

// advance moves the fake clock by d in housekeeping steps, until n
// particles reached the sink if n is positive.
func (r *tickRig) advance(d time.Duration, n int) {
	for step := time.Duration(0); step < d && (n <= 0 || r.outputs() < n); step += topology.DefaultHousekeepingInterval {
		r.wall.Advance(topology.DefaultHousekeepingInterval)
		// Let the instances take the tick; one they miss is covered by
		// the next, which reads the clock anew.
		time.Sleep(time.Millisecond)
	}
	if n > 0 {
		r.wait(fmt.Sprintf("%d outputs", n), func() bool { return r.outputs() >= n })
	}
}

func (r *tickRig) outputs() int {
	return len(r.sink.Particles())
}

func (r *tickRig) wait(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("no %s after 30s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// stop ends the stream and returns what reached the sink, as line
// protocol with times in seconds after the fake's start.
func (r *tickRig) stop() []string {
	close(r.in)
	require.NoError(r.t, <-r.done)
	var out []string
	for _, p := range r.sink.Particles() {
		p.Time -= time.Unix(1_700_000_000, 0).UnixNano()
		line, err := particle.AppendLineProtocol(nil, &p, particle.Second)
		require.NoError(r.t, err)
		out = append(out, string(line[:len(line)-1]))
	}
	return out
}

// Stream-time timers fire from the engine's ticks while no particle
// arrives: the watermark stands still, the fake clock moves.
func TestStreamTimeTimersFireOnEngineTicks(t *testing.T) {
	r := startTickRig(t, func() operation.Operation { return newSilence(10 * time.Second) })
	r.emit(r.at(optest.Reading(0, "a", 1)), r.at(optest.Reading(0, "b", 1)))
	r.advance(5*time.Second, 0)
	r.emit(r.at(optest.Reading(5, "a", 1)))
	r.advance(time.Minute, 2)
	assert.Equal(t, []string{"silent,node=b for_s=10i 10", "silent,node=a for_s=10i 15"}, r.stop())
}

// PerKey evicts on the engine's ticks, on the stream clock: each key's
// count comes out when it has been idle for the ttl, before the stream
// ends.
func TestPerKeyEvictsOnEngineTicks(t *testing.T) {
	r := startTickRig(t, operation.PerKey(operation.ByTags("k"), func() operation.Operation { return &counter{} }, 10*time.Second))
	r.emit(r.at(keyed(0, "a")), r.at(keyed(0, "b")))
	r.advance(5*time.Second, 0)
	r.emit(r.at(keyed(5, "a")))
	r.advance(time.Minute, 2)
	assert.Equal(t, []string{"count,k=b n=1i 0", "count,k=a n=2i 5"}, r.stop(), "evicted by ticks, nothing left to flush")
}
