package topology_test

import (
	"context"
	"sync"
	"sync/atomic"
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
				if err := out.Emit(particle.Particle{Time: ts, Measurement: "m", Tags: []particle.Tag{{Key: "k", Value: string(rune('a' + i%5))}}}); err != nil {
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
	metas chan particle.Particle
}

func (c tickCounter) HandleMeta(_ context.Context, m particle.Particle, _ operation.Emitter) error {
	if c.metas != nil {
		c.metas <- m
	}
	return nil
}

func (c tickCounter) OnTick(_ context.Context, now int64, _ operation.Emitter) error {
	select {
	case c.ticks <- now:
	default:
	}
	return nil
}

// Operations see the run's one stream clock: TickHandler on every
// housekeeping round, and the engine's Tick meta particle at every multiple
// of the tick interval. A clock that stands still (a paused replay) fires
// no tick.
func TestTicksFollowTheStreamClock(t *testing.T) {
	wall := streamclock.NewFake(time.Unix(0, 0))
	var stream atomic.Int64
	stream.Store(1e9)
	release := make(chan struct{})
	topo := newTopology(t, topology.Config{Wall: wall, Replay: true, Clock: streamclock.Func(stream.Load), TickInterval: 10 * time.Second})
	topo.AddSource("src", topology.Single(topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		<-release
		return nil
	})), topology.SourceConfig{})
	ticks := make(chan int64, 1)
	metas := make(chan particle.Particle, 4)
	noop := func(context.Context, particle.Particle, operation.Emitter) error { return nil }
	topo.AddBolt("b", operation.Stateless(tickCounter{Func: noop, ticks: ticks, metas: metas}), topology.BoltConfig{}).Input("src", topology.Global())
	done := make(chan error)
	go func() { done <- topo.Run(context.Background()) }()

	// The instance's housekeeping ticker starts with Run, and takes ticks
	// as it can: advance the wall until a round has seen the clock at want.
	seen := func(want int64) {
		t.Helper()
		require.Eventually(t, func() bool {
			wall.Advance(time.Second)
			select {
			case now := <-ticks:
				return now == want
			default:
				return false
			}
		}, 10*time.Second, time.Millisecond)
	}
	seen(1e9)
	tick := <-metas
	assert.Equal(t, metaparticle.Tick{Domain: metaparticle.StreamTime}, tick.Meta)
	assert.Equal(t, int64(0), tick.Time, "the last multiple of the interval")

	stream.Store(25e9)
	seen(25e9)
	assert.Equal(t, int64(20e9), (<-metas).Time)
	seen(25e9) // the stream clock stands still
	assert.Empty(t, metas, "no tick while the clock stands")
	close(release)
	require.NoError(t, <-done)
}
