package ops_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/ops"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// A tumbling window of 10 s computes the mean and maximum per node; the
// watermark closes the windows.
func ExampleNewStats() {
	op, _ := ops.NewStats(ops.StatsConfig{Size: 10 * time.Second, By: []string{"node"}, Aggregates: []string{"mean", "max"}})
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

// Embedding: the mean temperature of a real recording every two hours,
// in a topology of a few lines.
func Example_embed() {
	topo, _ := topology.New(topology.Config{Replay: true})
	topo.AddSource("wsn", topology.Single(&file.Source{Paths: []string{"../testdata/library1-r1.lp"}}), topology.SourceConfig{})
	mean := func() operation.Operation {
		op, _ := ops.NewStats(ops.StatsConfig{Size: 2 * time.Hour, Fields: []string{"temperature"}})
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

// Align merges several sensors' readings into one particle per time
// bucket, once the watermark has passed the bucket: the heart of time
// synchronization.
func ExampleNewAlign() {
	op, _ := ops.NewAlign(ops.AlignConfig{Bucket: 10 * time.Second, Sensor: []string{"node"}, Fields: []string{"temp"}})
	out := &operation.Collector{}
	ctx := context.Background()
	for _, r := range []struct {
		t    int64
		node string
		v    float64
	}{{1, "a", 20}, {3, "b", 18}, {12, "a", 21}, {14, "b", 19}} {
		_ = op.Process(ctx, particle.Particle{Time: r.t * 1e9, Measurement: "room", Tags: []particle.Tag{{Key: "node", Value: r.node}},
			Fields: []particle.Field{{Key: "temp", Value: particle.Float(r.v)}}}, out)
	}
	_ = op.(operation.WatermarkHandler).OnWatermark(ctx, math.MaxInt64, out)
	for _, p := range out.Emitted {
		line, _ := particle.AppendLineProtocol(nil, &p, particle.Second)
		fmt.Print(string(line))
	}
	// Output:
	// room a_temp=20,b_temp=18 0
	// room a_temp=21,b_temp=19 10
}
