package topology_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// BenchmarkTopology measures particles per second through source → bolt
// with 4 instances (fields grouping) → sink.
func BenchmarkTopology(b *testing.B) {
	for _, acking := range []bool{false, true} {
		name := "acking=off"
		if acking {
			name = "acking=on"
		}
		b.Run(name, func(b *testing.B) { benchmarkTopology(b, acking) })
	}
}

func benchmarkTopology(b *testing.B, acking bool) {
	const keys = 64
	tags := make([][]particle.Tag, keys)
	for k := range keys {
		tags[k] = []particle.Tag{{Key: "node", Value: strconv.Itoa(k)}}
	}
	fields := []particle.Field{{Key: "temperature", Value: particle.Float(21.5)}, {Key: "humidity", Value: particle.Float(48)}}
	n := b.N
	var sunk atomic.Int64
	topo, err := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: acking}})
	if err != nil {
		b.Fatal(err)
	}
	topo.AddSource("gen", topology.Single(topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		for i := range n {
			var id any
			if acking {
				id = true
			}
			p := particle.Particle{Time: int64(i), Measurement: "env", Tags: tags[i%keys], Fields: fields}
			if err := out.Emit(p, id); err != nil {
				return err
			}
		}
		return nil
	})), topology.SourceConfig{})
	topo.AddBolt("work", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
		out.Emit(in)
		return nil
	})), topology.BoltConfig{Parallelism: 4}).Input("gen", topology.Fields("node"))
	topo.AddBolt("sink", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
		sunk.Add(1)
		return nil
	})), topology.BoltConfig{}).Input("work", topology.Global())

	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if err := topo.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	if got := sunk.Load(); got != int64(n) {
		b.Fatalf("sunk %d of %d", got, n)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "particles/s")
}
