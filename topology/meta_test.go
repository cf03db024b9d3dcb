package topology_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
)

// calibrate is a user-defined meta particle.
type calibrate struct{ offset float64 }

func (calibrate) MetaType() string { return "calibrate" }

// metaCounter records, per instance, the meta particles it handled and
// the event times it processed, in order.
type metaCounter struct {
	mu    sync.Mutex
	next  int
	metas map[int][]metaparticle.ID
	order map[int][]int64
}

func (c *metaCounter) factory() operation.Factory {
	return func() operation.Operation {
		c.mu.Lock()
		id := c.next
		c.next++
		c.mu.Unlock()
		return &countingOp{c: c, id: id}
	}
}

type countingOp struct {
	c  *metaCounter
	id int
}

func (o *countingOp) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	o.c.order[o.id] = append(o.c.order[o.id], in.Time)
	return nil
}

func (o *countingOp) HandleMeta(_ context.Context, m particle.Particle, _ operation.Emitter) error {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	o.c.metas[o.id] = append(o.c.metas[o.id], metaparticle.IDOf(&m))
	o.c.order[o.id] = append(o.c.order[o.id], m.Time)
	return nil
}

// Meta particles reach every instance of every downstream bolt, whatever
// the grouping, and each instance handles each identity exactly once
// although it receives one copy per upstream instance.
func TestMetaParticlesAreBroadcastAndDeduplicated(t *testing.T) {
	const perSource, metaEvery = 300, 50
	topo := newTopology(t, topology.Config{BatchSize: 16})
	topo.AddSource("src", func(instance int) topology.Source {
		return topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
			for i := 1; i <= perSource; i++ {
				ts := int64(i*10 + instance)
				if i%metaEvery == 0 {
					if err := out.EmitMeta(ts, calibrate{offset: float64(i)}); err != nil {
						return err
					}
				}
				if err := out.Emit(particle.Particle{Time: ts, Measurement: "m", Tags: []particle.Tag{{Key: "k", Value: string(rune('a' + i%5))}}}, nil); err != nil {
					return err
				}
			}
			return nil
		})
	}, topology.SourceConfig{Parallelism: 2})
	topo.AddBolt("mid", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
		out.Emit(in)
		return nil
	})), topology.BoltConfig{Parallelism: 3}).Input("src", topology.Fields("k"))
	c := &metaCounter{metas: map[int][]metaparticle.ID{}, order: map[int][]int64{}}
	topo.AddBolt("last", c.factory(), topology.BoltConfig{Parallelism: 2}).Input("mid", topology.Fields("k"))
	require.NoError(t, topo.Run(context.Background()))

	wantMetas := 2 * perSource / metaEvery
	require.Len(t, c.metas, 2)
	for id, metas := range c.metas {
		seen := map[metaparticle.ID]bool{}
		for _, m := range metas {
			require.False(t, seen[m], "instance %d handled %v twice", id, m)
			seen[m] = true
		}
		assert.Len(t, metas, wantMetas, "instance %d", id)
		for i := 1; i < len(c.order[id]); i++ {
			require.LessOrEqual(t, c.order[id][i-1], c.order[id][i], "instance %d went back in time", id)
		}
	}
	// Three "mid" instances forwarded a copy of each meta particle to
	// each "last" instance: two of every three copies were duplicates.
	assert.Equal(t, uint64(2*2*wantMetas), topo.Stats("last").Duplicates.Load())
}

type tickCounter struct {
	operation.Func
	ticks chan int64
}

func (c tickCounter) OnTick(_ context.Context, now int64, _ operation.Emitter) error {
	select {
	case c.ticks <- now:
	default:
	}
	return nil
}

// Operations that implement TickHandler see the stream clock pass, at the
// replay speed.
func TestTickHandlerSeesTheStreamClock(t *testing.T) {
	wall := streamclock.NewFake(time.Unix(0, 0))
	release := make(chan struct{})
	topo := newTopology(t, topology.Config{Wall: wall, Clock: topology.ClockConfig{Replay: true, Speed: 100}})
	topo.AddSource("src", topology.Single(topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		if err := out.Emit(particle.Particle{Time: 1e9, Measurement: "m"}, nil); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
		<-release
		return nil
	})), topology.SourceConfig{})
	ticks := make(chan int64, 1)
	topo.AddBolt("b", operation.Stateless(tickCounter{Func: func(context.Context, particle.Particle, operation.Emitter) error { return nil }, ticks: ticks}), topology.BoltConfig{}).Input("src", topology.Global())
	done := make(chan error)
	go func() { done <- topo.Run(context.Background()) }()

	// Wait until the particle started the instance's replay clock, then
	// let one second of wall time pass: 100 s of stream time.
	require.Eventually(t, func() bool { return topo.Stats("b").Processed.Load() == 1 }, 10*time.Second, time.Millisecond)
	wall.Advance(time.Second)
	now := <-ticks
	assert.Equal(t, int64(1e9+100e9), now)
	close(release)
	require.NoError(t, <-done)
}

// A SpeedChange meta particle sets the speed of every downstream stream
// clock from that point on.
func TestSpeedChangeAdjustsDownstreamClocks(t *testing.T) {
	wall := streamclock.NewFake(time.Unix(0, 0))
	release := make(chan struct{})
	topo := newTopology(t, topology.Config{Wall: wall, Clock: topology.ClockConfig{Replay: true, Speed: 100}})
	topo.AddSource("src", topology.Single(topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		if err := out.Emit(particle.Particle{Time: 1e9, Measurement: "m"}, nil); err != nil {
			return err
		}
		if err := out.EmitMeta(1e9, metaparticle.SpeedChange{Speed: 10}); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
		<-release
		return nil
	})), topology.SourceConfig{})
	ticks := make(chan int64, 1)
	noop := func(context.Context, particle.Particle, operation.Emitter) error { return nil }
	topo.AddBolt("b", operation.Stateless(tickCounter{Func: noop, ticks: ticks}), topology.BoltConfig{Parallelism: 2}).Input("src", topology.Shuffle())
	done := make(chan error)
	go func() { done <- topo.Run(context.Background()) }()

	require.Eventually(t, func() bool { return topo.Stats("b").Meta.Load() == 2 }, 10*time.Second, time.Millisecond)
	wall.Advance(time.Second)
	assert.Equal(t, int64(1e9+10e9), <-ticks, "10 s of stream time at 10x")
	close(release)
	require.NoError(t, <-done)
}
