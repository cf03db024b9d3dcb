package operation_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// A tumbling window of 10 s computes the mean and maximum per node; the
// watermark closes the windows.
func ExampleNewStats() {
	op, _ := operation.NewStats(operation.StatsConfig{Size: 10 * time.Second, By: []string{"node"}, Aggregates: []string{"mean", "max"}})
	out := &operation.Collector{}
	ctx := context.Background()
	for _, r := range []struct {
		t    int64
		node string
		v    float64
	}{{1, "a", 20}, {3, "b", 18}, {8, "a", 22}, {12, "a", 25}} {
		p := particle.Particle{Time: r.t * 1e9, Measurement: "room", Tags: []particle.Tag{{Key: "node", Value: r.node}},
			Fields: []particle.Field{{Key: "temp", Value: particle.Float(r.v)}}}
		_ = op.Process(ctx, p, out)
	}
	_ = op.(operation.WatermarkHandler).OnWatermark(ctx, 10e9, out) // closes [0s, 10s)
	for _, p := range out.Emitted {
		line, _ := particle.AppendLineProtocol(nil, &p, particle.Second)
		fmt.Print(string(line))
	}
	// Output:
	// room,node=a temp_mean=21,temp_max=22 10
	// room,node=b temp_mean=18,temp_max=18 10
}

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

// Embedding: the mean temperature of a real recording every two hours,
// in a topology of a few lines.
func Example_embed() {
	topo, _ := topology.New(topology.Config{Clock: topology.ClockConfig{Replay: true, Speed: streamclock.Unpaced}})
	topo.AddSource("wsn", topology.Single(&file.Source{Paths: []string{"../testdata/library1-r1.lp"}}), topology.SourceConfig{})
	mean := func() operation.Operation {
		op, _ := operation.NewStats(operation.StatsConfig{Size: 2 * time.Hour, Fields: []string{"temperature"}})
		return op
	}
	topo.AddBolt("mean", mean, topology.BoltConfig{Buffer: syncbuffer.Config{Window: 5 * time.Second}}).Input("wsn", topology.Shuffle())
	// Results come every two hours of event time: beyond the default bound
	// on how far ahead of the (unpaced) stream clock a particle may be.
	sink := operation.Stateless(file.NewSink(os.Stdout, particle.Second))
	topo.AddBolt("out", sink, topology.BoltConfig{Buffer: syncbuffer.Config{FutureBound: -1}}).Input("mean", topology.Global())
	_ = topo.Run(context.Background())
	// Output:
	// wsn temperature_mean=21.813383720930236 1163440800
	// wsn temperature_mean=21.45455520786772 1163448000
	// wsn temperature_mean=21.154097191261688 1163455200
	// wsn temperature_mean=20.981628430049486 1163462400
}
