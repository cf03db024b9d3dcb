package topology_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// generate is a source of n in-order particles with a "key" tag cycling
// over keys values.
func generate(n, keys int) topology.Source {
	return topology.Retaining(func(ctx context.Context, out topology.SourceEmitter) error {
		tags := make([][]particle.Tag, keys)
		for k := range keys {
			tags[k] = []particle.Tag{{Key: "key", Value: strconv.Itoa(k)}}
		}
		for i := range n {
			p := particle.Particle{Time: int64(i + 1), Measurement: "m", Tags: tags[i%keys],
				Fields: []particle.Field{{Key: "i", Value: particle.Int(int64(i))}}}
			if err := out.EmitTracked(p, uint64(i+1)); err != nil {
				return err
			}
		}
		return nil
	})
}

// recorder is a thread-safe sink that records particles per instance.
type recorder struct {
	mu   sync.Mutex
	byID map[int][]particle.Particle
	next atomic.Int64
}

func (r *recorder) factory() operation.Factory {
	return func() operation.Operation {
		id := int(r.next.Add(1) - 1)
		return operation.Func(func(_ context.Context, in particle.Particle, _ operation.Emitter) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.byID == nil {
				r.byID = map[int][]particle.Particle{}
			}
			r.byID[id] = append(r.byID[id], in)
			return nil
		})
	}
}

func (r *recorder) all() []particle.Particle {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []particle.Particle
	for _, ps := range r.byID {
		out = append(out, ps...)
	}
	return out
}

func newTopology(t testing.TB, cfg topology.Config) *topology.Topology {
	t.Helper()
	topo, err := topology.New(cfg)
	require.NoError(t, err)
	return topo
}

func TestGroupings(t *testing.T) {
	const n, keys, par = 2000, 17, 4
	cases := []struct {
		name     string
		grouping topology.Grouping
		check    func(t *testing.T, byID map[int][]particle.Particle)
	}{
		{"fields", topology.Fields("key"), func(t *testing.T, byID map[int][]particle.Particle) {
			owner := map[string]int{}
			total := 0
			for id, ps := range byID {
				total += len(ps)
				for _, p := range ps {
					k, _ := p.Tag("key")
					if o, seen := owner[k]; seen {
						require.Equal(t, o, id, "key %s reached two instances", k)
					}
					owner[k] = id
				}
			}
			require.Equal(t, n, total)
			require.Len(t, owner, keys)
		}},
		{"all", topology.All(), func(t *testing.T, byID map[int][]particle.Particle) {
			require.Len(t, byID, par)
			for id, ps := range byID {
				require.Len(t, ps, n, "instance %d", id)
				seen := map[int64]bool{}
				for _, p := range ps {
					require.False(t, seen[p.Time], "instance %d got %d twice", id, p.Time)
					seen[p.Time] = true
				}
			}
		}},
		{"global", topology.Global(), func(t *testing.T, byID map[int][]particle.Particle) {
			nonEmpty := 0
			for _, ps := range byID {
				if len(ps) > 0 {
					nonEmpty++
					require.Len(t, ps, n)
				}
			}
			require.Equal(t, 1, nonEmpty)
		}},
		{"shuffle", topology.Shuffle(), func(t *testing.T, byID map[int][]particle.Particle) {
			total := 0
			for id, ps := range byID {
				total += len(ps)
				require.InDelta(t, n/par, len(ps), 1, "instance %d", id)
			}
			require.Equal(t, n, total)
		}},
		{"direct", topology.Direct(func(p *particle.Particle, n int) int { return int(p.Time) % 2 }), func(t *testing.T, byID map[int][]particle.Particle) {
			total := 0
			for _, ps := range byID {
				total += len(ps)
				for _, p := range ps {
					require.Equal(t, ps[0].Time%2, p.Time%2)
				}
			}
			require.Equal(t, n, total)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			topo := newTopology(t, topology.Config{BatchSize: 16})
			topo.AddSource("gen", topology.Single(generate(n, keys)), topology.SourceConfig{})
			var rec recorder
			topo.AddBolt("rec", rec.factory(), topology.BoltConfig{Parallelism: par}).Input("gen", tc.grouping)
			require.NoError(t, topo.Run(context.Background()))
			tc.check(t, rec.byID)
		})
	}
}

func TestEveryParticleArrivesInOrderThroughAChain(t *testing.T) {
	const n = 10000
	topo := newTopology(t, topology.Config{BatchSize: 64})
	topo.AddSource("gen", func(i int) topology.Source { return generate(n, 8) }, topology.SourceConfig{Parallelism: 2})
	topo.AddBolt("double", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
		out.Emit(in)
		out.Emit(in)
		return nil
	})), topology.BoltConfig{Parallelism: 3}).Input("gen", topology.Fields("key"))
	var rec recorder
	topo.AddBolt("sink", rec.factory(), topology.BoltConfig{}).Input("double", topology.Global())
	require.NoError(t, topo.Run(context.Background()))

	got := rec.all()
	require.Len(t, got, 2*2*n)
	for i := 1; i < len(got); i++ {
		require.LessOrEqual(t, got[i-1].Time, got[i].Time, "output went back in time at %d", i)
	}
	assert.Equal(t, uint64(2*n), topo.Stats("gen").Out.Load())
	assert.Equal(t, uint64(4*n), topo.Stats("sink").Processed.Load())
}

func TestPanickingOperationFailsItsInputAndTheProcessLivesOn(t *testing.T) {
	var dead []topology.DeadLetter
	var mu sync.Mutex
	topo := newTopology(t, topology.Config{DeadLetters: topology.DeadLetterFunc(func(_ context.Context, d topology.DeadLetter) {
		mu.Lock()
		defer mu.Unlock()
		dead = append(dead, d)
	})})
	topo.AddSource("gen", topology.Single(generate(100, 1)), topology.SourceConfig{})
	var rec recorder
	topo.AddBolt("boom", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
		if in.Time%10 == 0 {
			panic(fmt.Sprintf("bad particle %d", in.Time))
		}
		out.Emit(in)
		return nil
	})), topology.BoltConfig{}).Input("gen", topology.Shuffle())
	topo.AddBolt("sink", rec.factory(), topology.BoltConfig{}).Input("boom", topology.Global())
	require.NoError(t, topo.Run(context.Background()))

	assert.Len(t, rec.all(), 90)
	assert.Equal(t, uint64(10), topo.Stats("boom").Panics.Load())
	require.Len(t, dead, 10)
	var pe *topology.PanicError
	require.ErrorAs(t, dead[0].Err, &pe)
	assert.Contains(t, pe.Error(), "bad particle 10")
	assert.NotEmpty(t, pe.Stack)
}

func TestCancelDrainsEverythingEmitted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var emitted atomic.Int64
	topo := newTopology(t, topology.Config{BatchSize: 32})
	topo.AddSource("endless", topology.Single(topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		for i := int64(1); ; i++ {
			if err := out.Emit(particle.Particle{Time: i, Measurement: "m"}); err != nil {
				return err
			}
			if emitted.Add(1) == 5000 {
				cancel()
			}
		}
	})), topology.SourceConfig{})
	var rec recorder
	topo.AddBolt("sink", rec.factory(), topology.BoltConfig{Parallelism: 2}).Input("endless", topology.Shuffle())
	require.NoError(t, topo.Run(ctx))
	assert.GreaterOrEqual(t, emitted.Load(), int64(5000))
	assert.Equal(t, int(emitted.Load()), len(rec.all()), "count in = count out")
}

func TestSourceErrorStopsTheTopologyAfterDraining(t *testing.T) {
	boom := errors.New("disk on fire")
	topo := newTopology(t, topology.Config{})
	topo.AddSource("bad", topology.Single(topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		for i := range 10 {
			if err := out.Emit(particle.Particle{Time: int64(i), Measurement: "m"}); err != nil {
				return err
			}
		}
		return boom
	})), topology.SourceConfig{})
	topo.AddSource("endless", topology.Single(topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		<-ctx.Done()
		return ctx.Err()
	})), topology.SourceConfig{})
	var rec recorder
	topo.AddBolt("sink", rec.factory(), topology.BoltConfig{}).Input("bad", topology.Global()).Input("endless", topology.Global())
	err := topo.Run(context.Background())
	require.ErrorIs(t, err, boom)
	assert.Len(t, rec.all(), 10)
}

func TestInvalidTopologies(t *testing.T) {
	noop := operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error { return nil }))
	cases := []struct {
		name  string
		build func(*topology.Topology)
	}{
		{"no source", func(t *topology.Topology) {}},
		{"unknown input", func(t *topology.Topology) {
			t.AddSource("s", topology.Single(generate(1, 1)), topology.SourceConfig{})
			t.AddBolt("b", noop, topology.BoltConfig{}).Input("nope", topology.Global())
		}},
		{"duplicate name", func(t *topology.Topology) {
			t.AddSource("s", topology.Single(generate(1, 1)), topology.SourceConfig{})
			t.AddBolt("s", noop, topology.BoltConfig{}).Input("s", topology.Global())
		}},
		{"cycle", func(t *topology.Topology) {
			t.AddSource("s", topology.Single(generate(1, 1)), topology.SourceConfig{})
			t.AddBolt("a", noop, topology.BoltConfig{}).Input("s", topology.Global()).Input("b", topology.Global())
			t.AddBolt("b", noop, topology.BoltConfig{}).Input("a", topology.Global())
		}},
		{"bolt without input", func(t *topology.Topology) {
			t.AddSource("s", topology.Single(generate(1, 1)), topology.SourceConfig{})
			t.AddBolt("a", noop, topology.BoltConfig{})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			topo := newTopology(t, topology.Config{})
			tc.build(topo)
			require.ErrorIs(t, topo.Run(context.Background()), topology.ErrInvalidTopology)
		})
	}
}
