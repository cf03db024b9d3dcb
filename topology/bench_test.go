package topology_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/checkpoint"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// benchCase is one shape of work for BenchmarkTopology.
type benchCase struct {
	keys   int
	acking bool
	// step is the event time between consecutive particles: the inverse
	// of the event rate.
	step time.Duration
	// disorder bounds how far a particle's event time lies behind its place
	// in the stream; the bolt's window is twice it. Zero is in order.
	disorder time.Duration
}

// BenchmarkTopology measures particles per second through source → bolt
// with 4 instances (fields grouping) → sink. The acking=off and acking=on
// cases are the best case: in order, window 0, 64 keys, one particle per
// nanosecond of event time. The others add many keys, and disorder with a
// window to match at two event rates, which sets how many particles the
// bolt's sync buffers hold. Those report the bytes held per buffered
// particle, everything included: envelope, slot and tree entry. Their
// particles/s leave out the pause in which the heap is measured; ns/op
// does not.
func BenchmarkTopology(b *testing.B) {
	for _, acking := range []bool{false, true} {
		b.Run(ackingName(acking), func(b *testing.B) {
			benchmarkTopology(b, benchCase{keys: 64, acking: acking, step: time.Nanosecond})
		})
	}
	for _, acking := range []bool{false, true} {
		b.Run("inorder/keys=100k/"+ackingName(acking), func(b *testing.B) {
			benchmarkTopology(b, benchCase{keys: 100_000, acking: acking, step: time.Nanosecond})
		})
	}
	type variant struct {
		name string
		n    int
	}
	for _, rate := range []variant{{"10k", 10_000}, {"1M", 1_000_000}} {
		for _, keys := range []variant{{"64", 64}, {"100k", 100_000}} {
			for _, acking := range []bool{false, true} {
				c := benchCase{keys: keys.n, acking: acking, step: time.Second / time.Duration(rate.n), disorder: time.Second}
				name := "disorder=1s/rate=" + rate.name + "/keys=" + keys.name + "/" + ackingName(acking)
				b.Run(name, func(b *testing.B) { benchmarkTopology(b, c) })
			}
		}
	}
}

func ackingName(acking bool) string {
	if acking {
		return "acking=on"
	}
	return "acking=off"
}

func benchmarkTopology(b *testing.B, c benchCase) {
	tags := make([][]particle.Tag, c.keys)
	for k := range c.keys {
		tags[k] = []particle.Tag{{Key: "node", Value: strconv.Itoa(k)}}
	}
	fields := []particle.Field{{Key: "temperature", Value: particle.Float(21.5)}, {Key: "humidity", Value: particle.Float(48)}}
	n := b.N
	cfg := topology.Config{Acking: topology.AckingConfig{Enabled: c.acking}}
	if c.disorder > 0 {
		// Every buffered particle keeps its tree pending: a smaller bound
		// would stall the source until the trees time out.
		cfg.Acking.MaxPending = n + 1
	}
	var sunk atomic.Int64
	topo, err := topology.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	// The source measures the heap once it has emitted everything, when
	// the sync buffers hold the most.
	var (
		heapBefore uint64
		probe      time.Duration
		heldSize   float64
	)
	gen := &benchSource{c: c, tags: tags, fields: fields}
	gen.run = func(ctx context.Context, out topology.SourceEmitter) error {
		for i := range uint64(n) {
			var err error
			if c.acking {
				err = out.EmitTracked(gen.particle(i), i)
			} else {
				err = out.Emit(gen.particle(i))
			}
			if err != nil {
				return err
			}
		}
		if c.disorder == 0 {
			return nil
		}
		if err := out.Flush(); err != nil {
			return err
		}
		start := time.Now()
		heldSize = bytesPerBuffered(topo, n, heapBefore)
		probe = time.Since(start)
		return nil
	}
	topo.AddSource("gen", topology.Single(gen), topology.SourceConfig{})
	topo.AddBolt("work", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
		out.Emit(in)
		return nil
	})), topology.BoltConfig{Parallelism: 4, Buffer: syncbuffer.Config{Window: 2 * c.disorder}}).Input("gen", topology.Fields("node"))
	topo.AddBolt("sink", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
		sunk.Add(1)
		return nil
	})), topology.BoltConfig{}).Input("work", topology.Global())

	heapBefore = heapAlloc()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if err := topo.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start) - probe
	if got := sunk.Load(); got != int64(n) {
		b.Fatalf("sunk %d of %d", got, n)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "particles/s")
	if heldSize > 0 {
		b.ReportMetric(heldSize, "B/buffered")
	}
}

// benchSource emits the particles of a benchCase. Particle i is a function
// of i, so that the source redelivers without keeping anything.
type benchSource struct {
	c      benchCase
	tags   [][]particle.Tag
	fields []particle.Field
	run    func(ctx context.Context, out topology.SourceEmitter) error
}

func (s *benchSource) Run(ctx context.Context, out topology.SourceEmitter) error {
	return s.run(ctx, out)
}

func (s *benchSource) particle(i uint64) particle.Particle {
	t := int64(s.c.disorder) + int64(i)*int64(s.c.step)
	if s.c.disorder > 0 {
		t -= int64(splitmix64(i) % uint64(s.c.disorder))
	}
	return particle.Particle{Time: t, Measurement: "env", Tags: s.tags[i%uint64(len(s.tags))], Fields: s.fields}
}

func (s *benchSource) Ack(uint64)                                    {}
func (s *benchSource) Fail(uint64, acker.Reason, error)              {}
func (s *benchSource) Redeliver(i uint64) (particle.Particle, error) { return s.particle(i), nil }

// splitmix64 scrambles x: a random-looking disorder that is a function of
// the particle's number.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// bytesPerBuffered waits until the work bolt has taken in and settled all
// n particles, then returns the heap grown since before, per particle held
// in the sync buffers; 0 if too few are held to tell.
func bytesPerBuffered(topo *topology.Topology, n int, before uint64) float64 {
	work, sink := topo.Stats("work"), topo.Stats("sink")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if work.In.Load() == uint64(n) && work.Processed.Load()+uint64(work.Buffered.Load()) == uint64(n) {
			break
		}
	}
	held := work.Buffered.Load() + sink.Buffered.Load()
	if held < 10_000 {
		return 0
	}
	return (float64(heapAlloc()) - float64(before)) / float64(held)
}

func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkCheckpoints measures particles per second through source →
// per-key one-minute windows (2 instances) → sink, acking on, with
// checkpoints off and every second; step 1 ms of event time per particle,
// 1000 keys. With checkpoints, the windows' inputs are acknowledged by
// the checkpoints; without, when their windows fire. It reports the most
// trees pending at once.
func BenchmarkCheckpoints(b *testing.B) {
	for _, every := range []time.Duration{0, time.Second} {
		name := "checkpoints=off"
		if every > 0 {
			name = "checkpoints=" + every.String()
		}
		b.Run(name, func(b *testing.B) { benchmarkCheckpoints(b, every) })
	}
}

func benchmarkCheckpoints(b *testing.B, every time.Duration) {
	const keys = 1000
	tags := make([][]particle.Tag, keys)
	for k := range keys {
		tags[k] = []particle.Tag{{Key: "k", Value: strconv.Itoa(k)}}
	}
	n := b.N
	cfg := topology.Config{Replay: true, Acking: topology.AckingConfig{Enabled: true, MaxPending: n + 1}}
	if every > 0 {
		store, err := checkpoint.OpenDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		cfg.Checkpoints = topology.CheckpointConfig{Store: store, Interval: every}
		cfg.Acking.MaxPending = topology.DefaultMaxPending
	}
	topo, err := topology.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var sunk atomic.Int64
	var maxPending int
	gen := &benchSource{tags: tags}
	gen.run = func(ctx context.Context, out topology.SourceEmitter) error {
		for i := range uint64(n) {
			p := particle.Particle{Time: int64(i) * int64(time.Millisecond), Measurement: "m", Tags: tags[i%keys],
				Fields: []particle.Field{{Key: "v", Value: particle.Int(int64(i))}}}
			if err := out.EmitTracked(p, i); err != nil {
				return err
			}
			if i%4096 == 0 {
				maxPending = max(maxPending, topo.AckStats().Pending)
			}
		}
		return nil
	}
	topo.AddSource("gen", topology.Single(gen), topology.SourceConfig{})
	window := func() operation.Operation {
		return operation.Aggregate(operation.Tumbling(time.Minute), operation.ByTags("k"), sumAgg{})
	}
	topo.AddBolt("window", window, topology.BoltConfig{Parallelism: 2}).Input("gen", topology.Fields("k"))
	topo.AddBolt("sink", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
		sunk.Add(1)
		return nil
	})), topology.BoltConfig{}).Input("window", topology.Global())
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if err := topo.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "particles/s")
	b.ReportMetric(float64(maxPending), "max-pending")
	if cs := topo.Checkpoints(); every > 0 {
		b.ReportMetric(float64(cs.Completed), "checkpoints")
	}
}
