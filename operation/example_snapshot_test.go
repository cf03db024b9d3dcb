package operation_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// A window operation snapshotted mid-window and restored into a new one
// gives the results the first would have given.
func ExampleSnapshotter() {
	newStats := func() operation.Operation {
		op, _ := operation.NewStats(operation.StatsConfig{Size: 10 * time.Second, By: []string{"node"}, Aggregates: []string{"mean", "count"}})
		return op
	}
	reading := func(t int64, v float64) particle.Particle {
		return particle.Particle{Time: t * 1e9, Measurement: "room", Tags: []particle.Tag{{Key: "node", Value: "a"}},
			Fields: []particle.Field{{Key: "temp", Value: particle.Float(v)}}}
	}
	ctx := context.Background()
	op := newStats()
	_ = op.Process(ctx, reading(1, 20), &operation.Collector{})
	_ = op.Process(ctx, reading(4, 22), &operation.Collector{})

	var w state.Writer
	if err := op.(operation.Snapshotter).Snapshot(&w); err != nil {
		fmt.Println(err)
		return
	}
	restored := newStats()
	if err := restored.(operation.Snapshotter).Restore(state.NewReader(w.Bytes())); err != nil {
		fmt.Println(err)
		return
	}
	out := &operation.Collector{}
	_ = restored.Process(ctx, reading(7, 27), out)
	_ = restored.(operation.WatermarkHandler).OnWatermark(ctx, 10e9, out)
	for _, p := range out.Emitted {
		line, _ := particle.AppendLineProtocol(nil, &p, particle.Second)
		fmt.Print(string(line))
	}
	// Output:
	// room,node=a temp_mean=23,temp_count=3i 10
}
