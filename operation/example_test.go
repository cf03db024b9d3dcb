package operation_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// Batch hands over the particles of each window; here session windows per
// node that close after 5 s of silence.
func ExampleBatch() {
	op := operation.Batch(operation.Session(5*time.Second), operation.ByTags("node"),
		func(_ context.Context, w operation.Window, node string, batch []particle.Particle, _ operation.Emitter) error {
			fmt.Printf("node %s: %d readings in [%ds, %ds)\n", node, len(batch), w.Start/1e9, w.End/1e9)
			return nil
		})
	out := &operation.Collector{}
	ctx := context.Background()
	for _, t := range []int64{1, 2, 4, 12, 13} {
		_ = op.Process(ctx, particle.Particle{Time: t * 1e9, Tags: []particle.Tag{{Key: "node", Value: "a"}}}, out)
	}
	_ = op.OnWatermark(ctx, math.MaxInt64, out)
	fmt.Println("acknowledged:", len(out.Acked))
	// Output:
	// node a: 3 readings in [1s, 9s)
	// node a: 2 readings in [12s, 18s)
	// acknowledged: 5
}

// PerKey keeps one operation per key and evicts the keys that have been
// quiet for longer than the ttl, measured on the watermark.
func ExamplePerKey() {
	count := 0
	factory := operation.PerKey(operation.ByTags("node"), func() operation.Operation {
		count++ // one operation per key, made on demand
		return operation.Func(func(context.Context, particle.Particle, operation.Emitter) error { return nil })
	}, time.Minute)
	k := factory().(*operation.Keyed)
	ctx := context.Background()
	out := &operation.Collector{}
	for i, node := range []string{"a", "b", "a", "c"} {
		_ = k.Process(ctx, particle.Particle{Time: int64(i) * int64(time.Minute), Tags: []particle.Tag{{Key: "node", Value: node}}}, out)
	}
	fmt.Println("operations made:", count, "live keys:", k.Len())
	_ = k.OnWatermark(ctx, int64(150*time.Second), out) // b, last seen at 1m, is 90s old: evicted
	fmt.Println("live keys:", k.Len(), "evicted:", k.Evicted())
	// Output:
	// operations made: 3 live keys: 3
	// live keys: 2 evicted: 1
}

// silence alerts when a node has sent nothing for a while of stream time:
// one stream-time timer per node, fired from OnTick, so the alert comes
// while no particle arrives and the watermark stands still.
type silence struct {
	after  int64
	timers operation.Timers[string]
	due    map[string]int64
}

func newSilence(after time.Duration) *silence {
	return &silence{after: int64(after), due: map[string]int64{}}
}

func (s *silence) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	node, _ := in.Tag("node")
	if at, ok := s.due[node]; ok {
		s.timers.Delete(metaparticle.StreamTime, node, at)
	}
	s.due[node] = in.Time + s.after
	s.timers.Set(metaparticle.StreamTime, node, in.Time+s.after)
	return nil
}

func (s *silence) OnTick(_ context.Context, now int64, out operation.Emitter) error {
	s.timers.Advance(metaparticle.StreamTime, now, func(node string, at int64) {
		delete(s.due, node)
		out.Emit(particle.Particle{Time: at, Measurement: "silent", Tags: []particle.Tag{{Key: "node", Value: node}},
			Fields: []particle.Field{{Key: "for_s", Value: particle.Int(s.after / 1e9)}}})
	})
	return nil
}

// Stream-time timers fire on the stream clock, which the engine passes to
// OnTick every housekeeping interval: here an alert for a node silent for
// 10 s, while no reading arrives.
func ExampleTimers() {
	op := newSilence(10 * time.Second)
	ctx := context.Background()
	out := &operation.Collector{}
	reading := func(t int64, node string) particle.Particle {
		return particle.Particle{Time: t * 1e9, Measurement: "room", Tags: []particle.Tag{{Key: "node", Value: node}},
			Fields: []particle.Field{{Key: "temp", Value: particle.Float(20)}}}
	}
	_ = op.Process(ctx, reading(0, "a"), out)
	_ = op.Process(ctx, reading(0, "b"), out)
	_ = op.OnTick(ctx, 5e9, out)
	_ = op.Process(ctx, reading(5, "a"), out) // a is alive: its timer moves to 15 s
	for now := int64(6); now <= 20; now += 2 {
		_ = op.OnTick(ctx, now*1e9, out) // the engine's ticks, here every 2 s
	}
	for _, p := range out.Emitted {
		line, _ := particle.AppendLineProtocol(nil, &p, particle.Second)
		fmt.Print(string(line))
	}
	// Output:
	// silent,node=b for_s=10i 10
	// silent,node=a for_s=10i 15
}

// Typed works on a Go type: decode and encode are plain functions, the
// operation itself never touches a particle.
func ExampleTyped() {
	type reading struct {
		Node    string
		Celsius float64
	}
	decode := func(p particle.Particle) (reading, error) {
		node, _ := p.Tag("node")
		v, ok := p.Field("temp")
		if !ok {
			return reading{}, fmt.Errorf("no temp in %s", p.Measurement)
		}
		c, _ := v.Number()
		return reading{Node: node, Celsius: c}, nil
	}
	encode := func(r reading) particle.Particle {
		return particle.Particle{Measurement: "fahrenheit", Tags: []particle.Tag{{Key: "node", Value: r.Node}},
			Fields: []particle.Field{{Key: "temp", Value: particle.Float(r.Celsius*9/5 + 32)}}}
	}
	op := operation.Typed(decode, encode, func(_ context.Context, r reading, emit func(reading)) error {
		emit(r)
		return nil
	})
	out := &operation.Collector{}
	_ = op.Process(context.Background(), particle.Particle{Time: 1e9, Measurement: "room", Tags: []particle.Tag{{Key: "node", Value: "a"}},
		Fields: []particle.Field{{Key: "temp", Value: particle.Float(21.5)}}}, out)
	line, _ := particle.AppendLineProtocol(nil, &out.Emitted[0], particle.Second)
	fmt.Print(string(line))
	// Output:
	// fahrenheit,node=a temp=70.7 1
}

// TypedBatch hands each window's decoded values to a Go function: here
// the spread between the coldest and warmest reading per node and 10 s.
func ExampleTypedBatch() {
	decode := func(p particle.Particle) (float64, error) {
		v, ok := p.Field("temp")
		if !ok {
			return 0, fmt.Errorf("no temp in %s", p.Measurement)
		}
		c, _ := v.Number()
		return c, nil
	}
	type spread struct {
		Node     string
		Min, Max float64
	}
	encode := func(s spread) particle.Particle {
		return particle.Particle{Measurement: "spread", Tags: []particle.Tag{{Key: "node", Value: s.Node}},
			Fields: []particle.Field{{Key: "celsius", Value: particle.Float(s.Max - s.Min)}}}
	}
	op := operation.TypedBatch(operation.Tumbling(10*time.Second), operation.ByTags("node"), decode, encode,
		func(_ context.Context, _ operation.Window, node string, temps []float64, emit func(spread)) error {
			emit(spread{Node: node, Min: slices.Min(temps), Max: slices.Max(temps)})
			return nil
		})
	out := &operation.Collector{}
	ctx := context.Background()
	for _, r := range []struct {
		t int64
		v float64
	}{{1, 20}, {4, 23.5}, {9, 21}, {11, 19}} {
		_ = op.Process(ctx, particle.Particle{Time: r.t * 1e9, Measurement: "room", Tags: []particle.Tag{{Key: "node", Value: "a"}},
			Fields: []particle.Field{{Key: "temp", Value: particle.Float(r.v)}}}, out)
	}
	err := op.Process(ctx, particle.Particle{Time: 5e9, Measurement: "door", Tags: []particle.Tag{{Key: "node", Value: "a"}}}, out)
	fmt.Println(errors.Is(err, operation.ErrDecode), err)
	_ = op.OnWatermark(ctx, 10e9, out)
	line, _ := particle.AppendLineProtocol(nil, &out.Emitted[0], particle.Second)
	fmt.Print(string(line))
	// Output:
	// true operation: decode: no temp in door
	// spread,node=a celsius=3.5 10
}
