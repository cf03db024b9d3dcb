package topology_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
)

// failFirst is an operation that fails the first attempt of every particle
// at an even time and records what it processed.
type failFirst struct {
	mu   sync.Mutex
	seen map[int64]bool
	got  []particle.Particle
}

func (f *failFirst) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in.Time%2 == 0 && !f.seen[in.Time] {
		f.seen[in.Time] = true
		return errors.New("transient")
	}
	in.Origin, in.Seq = 0, 0
	f.got = append(f.got, in)
	return nil
}

// A Retaining source redelivers from memory: the engine's retries carry
// the particle as it was emitted, and nothing is held once all finished.
func TestRetainingRedeliversWhatWasEmitted(t *testing.T) {
	const n = 50
	reading := func(i int) particle.Particle {
		return particle.Particle{Time: int64(i), Measurement: "env",
			Tags:   []particle.Tag{{Key: "node", Value: strconv.Itoa(i % 7)}},
			Fields: []particle.Field{{Key: "v", Value: particle.Int(int64(i * i))}}}
	}
	src := topology.Retaining(func(_ context.Context, out topology.SourceEmitter) error {
		for i := 1; i <= n; i++ {
			if err := out.EmitTracked(reading(i), uint64(i)); err != nil {
				return err
			}
		}
		return nil
	})
	op := &failFirst{seen: map[int64]bool{}}
	topo := newTopology(t, ackingConfig(streamclock.System{}, nil))
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("flaky", operation.Stateless(operation.Func(op.Process)), topology.BoltConfig{}).Input("src", topology.Global())
	require.NoError(t, topo.Run(context.Background()))

	want := make([]particle.Particle, 0, n)
	for i := 1; i <= n; i++ {
		want = append(want, reading(i))
	}
	assert.ElementsMatch(t, want, op.got)
	assert.Equal(t, uint64(n/2), topo.Stats("src").Retried.Load())
	assert.Equal(t, uint64(n), topo.Stats("src").Acked.Load())
	for i := 1; i <= n; i++ {
		_, err := src.(topology.Acknowledger).Redeliver(uint64(i))
		assert.Error(t, err, "particle %d is still held", i)
	}
}

// forgetful redelivers nothing.
type forgetful struct {
	mu     sync.Mutex
	failed map[uint64]acker.Reason
}

func (f *forgetful) Run(_ context.Context, out topology.SourceEmitter) error {
	return out.EmitTracked(particle.Particle{Time: 2, Measurement: "m"}, 2)
}
func (f *forgetful) Ack(uint64) {}
func (f *forgetful) Fail(id uint64, r acker.Reason, _ error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed[id] = r
}
func (f *forgetful) Redeliver(uint64) (particle.Particle, error) {
	return particle.Particle{}, errors.New("gone")
}

// A source that cannot redeliver fails the tree for good, with its error
// in the dead letter.
func TestRedeliverErrorFailsTheTree(t *testing.T) {
	src := &forgetful{failed: map[uint64]acker.Reason{}}
	dead := &connectortest.DeadLetters{}
	topo := newTopology(t, ackingConfig(streamclock.System{}, dead))
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("flaky", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
		return errors.New("transient")
	})), topology.BoltConfig{}).Input("src", topology.Global())
	require.NoError(t, topo.Run(context.Background()))

	assert.Equal(t, map[uint64]acker.Reason{2: acker.Failed}, src.failed)
	require.Len(t, dead.All(), 1)
	assert.ErrorContains(t, dead.All()[0].Err, "gone")
}

// A tracked emit needs a source that can redeliver.
func TestEmitTrackedNeedsAnAcknowledger(t *testing.T) {
	topo := newTopology(t, ackingConfig(streamclock.System{}, nil))
	topo.AddSource("src", topology.Single(topology.SourceFunc(func(_ context.Context, out topology.SourceEmitter) error {
		return out.EmitTracked(particle.Particle{Time: 1, Measurement: "m"}, 1)
	})), topology.SourceConfig{})
	topo.AddBolt("sink", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
		return nil
	})), topology.BoltConfig{}).Input("src", topology.Global())
	require.ErrorIs(t, topo.Run(context.Background()), topology.ErrNotAcknowledger)
}
