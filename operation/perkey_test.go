package operation_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/internal/optest"
	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// counter is a per-key operation that counts its particles and emits the
// count when flushed.
type counter struct {
	n    int
	last int64
	key  string
}

func (c *counter) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	c.n++
	c.last = in.Time
	c.key, _ = in.Tag("k")
	return nil
}

func (c *counter) Flush(_ context.Context, out operation.Emitter) error {
	out.Emit(particle.Particle{Time: c.last, Measurement: "count", Tags: []particle.Tag{{Key: "k", Value: c.key}}, Fields: []particle.Field{{Key: "n", Value: particle.Int(int64(c.n))}}})
	return nil
}

func keyed(t float64, k string) particle.Particle {
	return particle.Particle{Time: int64(t * 1e9), Measurement: "m", Tags: []particle.Tag{{Key: "k", Value: k}}, Fields: []particle.Field{{Key: "v", Value: particle.Int(1)}}}
}

func TestPerKeyEvictsByWatermark(t *testing.T) {
	ctx := context.Background()
	k := operation.NewKeyed(operation.ByTags("k"), func() operation.Operation { return &counter{} }, 10*time.Second)
	c := &operation.Collector{}
	for _, p := range []particle.Particle{keyed(1, "a"), keyed(2, "b"), keyed(5, "a"), keyed(14, "c")} {
		require.NoError(t, k.Process(ctx, p, c))
	}
	require.Equal(t, 3, k.Len())
	require.NoError(t, k.OnWatermark(ctx, 14e9, c)) // b (last 2s) is 12s old: evicted
	assert.Equal(t, 2, k.Len())
	require.Len(t, c.Emitted, 1)
	assert.Equal(t, int64(1), c.Emitted[0].Fields[0].Value.IntValue())
	// A stream-time tick evicts too.
	require.NoError(t, k.HandleMeta(ctx, metaparticle.New(15e9, metaparticle.Tick{Domain: metaparticle.StreamTime}), c))
	assert.Equal(t, 1, k.Len())
	assert.Equal(t, uint64(2), k.Evicted())
	// a again: a new instance, counting from one.
	require.NoError(t, k.Process(ctx, keyed(20, "a"), c))
	require.NoError(t, k.Flush(ctx, c))
	require.NoError(t, k.Close())
	var counts []int64
	for _, p := range c.Emitted {
		counts = append(counts, p.Fields[0].Value.IntValue())
	}
	assert.Equal(t, []int64{1, 2, 1, 1}, counts)
}

// A million distinct keys pass through; eviction, by the watermark or by
// the stream clock's ticks, keeps the live keys, and the heap, bounded by
// the keys active within the ttl.
func TestPerKeyMillionKeysBoundedMemory(t *testing.T) {
	const keys = 1_000_000
	for _, tt := range []struct {
		name    string
		advance func(k *operation.Keyed, now int64, out operation.Emitter) error
	}{
		{"watermark", func(k *operation.Keyed, now int64, out operation.Emitter) error {
			return k.OnWatermark(context.Background(), now, out)
		}},
		{"stream clock", func(k *operation.Keyed, now int64, out operation.Emitter) error {
			return k.OnTick(context.Background(), now, out)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			k := operation.NewKeyed(operation.ByTags("k"), func() operation.Operation { return &counter{} }, time.Second)
			out := &optest.CountingEmitter{}
			var ms runtime.MemStats
			heap := func() uint64 {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				return ms.HeapAlloc
			}
			var base uint64
			maxLive := 0
			p := keyed(0, "")
			tag := []particle.Tag{{}}
			p.Tags = tag
			for i := range keys {
				p.Time = int64(i) * int64(time.Millisecond) // one new key per ms
				tag[0] = particle.Tag{Key: "k", Value: "key-" + strconv.Itoa(i)}
				require.NoError(t, k.Process(ctx, p, out))
				if i%1000 == 999 {
					require.NoError(t, tt.advance(k, p.Time, out))
					maxLive = max(maxLive, k.Len())
				}
				if i == keys/10 {
					base = heap()
				}
			}
			grown := int64(heap()) - int64(base)
			t.Logf("max live keys %d, heap growth from 100k to 1M keys %d B, evicted %d", maxLive, grown, k.Evicted())
			assert.LessOrEqual(t, maxLive, 2001)
			assert.Less(t, grown, int64(4<<20), "heap grew with the number of keys seen")
			assert.Equal(t, uint64(keys-k.Len()), k.Evicted())
			assert.Equal(t, int(k.Evicted()), out.N)
		})
	}
}

func BenchmarkPerKey(b *testing.B) {
	ctx := context.Background()
	k := operation.NewKeyed(operation.ByTags("k"), func() operation.Operation { return &counter{} }, time.Second)
	out := &optest.CountingEmitter{}
	names := make([]string, 1<<16)
	for i := range names {
		names[i] = "key-" + strconv.Itoa(i)
	}
	p := keyed(0, "")
	tag := []particle.Tag{{}}
	p.Tags = tag
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p.Time = int64(i) * int64(time.Millisecond)
		tag[0] = particle.Tag{Key: "k", Value: names[i%len(names)]}
		_ = k.Process(ctx, p, out)
		if i%1000 == 999 {
			_ = k.OnWatermark(ctx, p.Time, out)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "particles/s")
	b.ReportMetric(float64(k.Len()), "live-keys")
}

// BenchmarkKeyedStateSnapshot measures snapshot and restore of the 1M
// keys of a per-key manager, a counter each.
func BenchmarkKeyedStateSnapshot(b *testing.B) {
	optest.BenchmarkSnapshots(b, 1_000_000, []optest.OpCase{
		{Name: "per-key", New: operation.PerKey(operation.ByTags("node"), func() operation.Operation { return &snapCounter{} }, time.Hour)},
	})
}
