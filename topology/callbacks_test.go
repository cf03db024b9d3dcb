package topology_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// echoSource emits n tracked particles, and an untracked one for every
// Ack, from within the Ack.
type echoSource struct {
	n   int
	out atomic.Pointer[topology.SourceEmitter]
	mu  sync.Mutex
	// echoed counts the acks; echo particles take times after the n
	// tracked ones, in the order of the acks.
	echoed int
	errs   []error
}

func (s *echoSource) Run(_ context.Context, out topology.SourceEmitter) error {
	s.out.Store(&out)
	for i := 1; i <= s.n; i++ {
		if err := out.EmitTracked(particle.Particle{Time: int64(i), Measurement: "m"}, uint64(i)); err != nil {
			return err
		}
	}
	return nil
}

func (s *echoSource) Ack(uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.echoed++
	out := *s.out.Load()
	if err := out.Emit(particle.Particle{Time: int64(s.n + s.echoed), Measurement: "echo"}); err != nil {
		s.errs = append(s.errs, err)
	}
}

func (s *echoSource) Fail(uint64, acker.Reason, error) {}

func (s *echoSource) Redeliver(id uint64) (particle.Particle, error) {
	return particle.Particle{Time: int64(id), Measurement: "m"}, nil
}

// A source's Ack may emit: it is called outside the engine's locks, with
// acking on (from the source's own goroutine) and off (once EmitTracked
// accepted the particle).
func TestAckMayEmit(t *testing.T) {
	for _, acking := range []bool{true, false} {
		t.Run(fmt.Sprintf("acking=%v", acking), func(t *testing.T) {
			const n = 300
			src := &echoSource{n: n}
			cfg := ackingConfig(streamclock.System{}, nil)
			cfg.Acking.Enabled = acking
			cfg.InboxSize = 1
			topo := newTopology(t, cfg)
			topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
			var mu sync.Mutex
			got := map[string]int{}
			// The echoes of early acks come after later tracked particles:
			// they pass as late.
			topo.AddBolt("count", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, _ operation.Emitter) error {
				mu.Lock()
				defer mu.Unlock()
				got[in.Measurement]++
				return nil
			})), topology.BoltConfig{Buffer: syncbuffer.Config{Late: syncbuffer.LatePass}}).Input("src", topology.Global())
			require.NoError(t, topo.Run(context.Background()))

			assert.Empty(t, src.errs)
			assert.Equal(t, n, src.echoed)
			assert.Equal(t, map[string]int{"m": n, "echo": n}, got)
		})
	}
}

// blockedAcker emits one tracked particle; its Ack blocks until release
// is closed.
type blockedAcker struct {
	entered, release chan struct{}
}

func (s blockedAcker) Run(_ context.Context, out topology.SourceEmitter) error {
	return out.EmitTracked(particle.Particle{Time: 1, Measurement: "slow"}, 1)
}

func (s blockedAcker) Ack(uint64) {
	close(s.entered)
	<-s.release
}

func (s blockedAcker) Fail(uint64, acker.Reason, error) {}

func (s blockedAcker) Redeliver(uint64) (particle.Particle, error) {
	return particle.Particle{Time: 1, Measurement: "slow"}, nil
}

// A slow Ack delays only its source: the bolt that completed the tree
// goes on with another source's particles meanwhile.
func TestSlowAckDelaysOnlyItsSource(t *testing.T) {
	slow := blockedAcker{entered: make(chan struct{}), release: make(chan struct{})}
	topo := newTopology(t, ackingConfig(streamclock.System{}, nil))
	topo.AddSource("slow", topology.Single(slow), topology.SourceConfig{})
	topo.AddSource("fast", topology.Single(topology.SourceFunc(func(_ context.Context, out topology.SourceEmitter) error {
		for i := int64(2); ; i++ {
			select {
			case <-slow.release:
				return nil
			default:
			}
			if err := out.Emit(particle.Particle{Time: i, Measurement: "fast"}); err != nil {
				return err
			}
		}
	})), topology.SourceConfig{})
	progressed := make(chan struct{})
	var once sync.Once
	topo.AddBolt("both", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, _ operation.Emitter) error {
		select {
		case <-slow.entered:
			if in.Measurement == "fast" {
				once.Do(func() { close(progressed) })
			}
		default:
		}
		return nil
	})), topology.BoltConfig{}).Input("slow", topology.Global()).Input("fast", topology.Global())
	ran := make(chan error, 1)
	go func() { ran <- topo.Run(context.Background()) }()

	<-progressed
	close(slow.release)
	require.NoError(t, <-ran)
	assert.Equal(t, uint64(1), topo.Stats("slow").Acked.Load())
}
