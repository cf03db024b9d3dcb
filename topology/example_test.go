package topology_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Two sensors arrive out of order; a bolt with a 5 s window releases their
// readings in event-time order, converts them and prints them.
func Example() {
	readings := []particle.Particle{
		{Time: 3e9, Measurement: "t", Tags: []particle.Tag{{Key: "s", Value: "a"}}, Fields: []particle.Field{{Key: "c", Value: particle.Float(21)}}},
		{Time: 1e9, Measurement: "t", Tags: []particle.Tag{{Key: "s", Value: "b"}}, Fields: []particle.Field{{Key: "c", Value: particle.Float(19)}}},
		{Time: 2e9, Measurement: "t", Tags: []particle.Tag{{Key: "s", Value: "a"}}, Fields: []particle.Field{{Key: "c", Value: particle.Float(20)}}},
	}
	topo, _ := topology.New(topology.Config{})
	topo.AddSource("sensors", topology.Single(topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		for _, p := range readings {
			if err := out.Emit(p); err != nil {
				return err
			}
		}
		return nil
	})), topology.SourceConfig{})
	topo.AddBolt("fahrenheit", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
		c, _ := in.Field("c")
		in.Fields = []particle.Field{{Key: "f", Value: particle.Float(c.FloatValue()*9/5 + 32)}}
		out.Emit(in)
		return nil
	})), topology.BoltConfig{Buffer: syncbuffer.Config{Window: 5e9}}).Input("sensors", topology.Shuffle())
	var out strings.Builder
	topo.AddBolt("print", operation.Stateless(file.NewSink(&out, particle.Second)), topology.BoltConfig{}).Input("fahrenheit", topology.Global())
	if err := topo.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Print(out.String())
	// Output:
	// t,s=b f=66.2 1
	// t,s=a f=68 2
	// t,s=a f=69.8 3
}

// A source without a store of its own emits tracked particles through
// Retaining, which keeps each one until its tree finishes: a bolt fails
// the first attempt at reading 2, and the engine emits it again from what
// the source kept. The retry comes after what went on meanwhile: at least
// once, not in order.
func ExampleRetaining() {
	topo, _ := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true}})
	topo.AddSource("sensors", topology.Single(topology.Retaining(func(ctx context.Context, out topology.SourceEmitter) error {
		for i := range 3 {
			p := particle.Particle{Time: int64(i+1) * 1e9, Measurement: "t", Fields: []particle.Field{{Key: "n", Value: particle.Int(int64(i + 1))}}}
			if err := out.EmitTracked(p, uint64(i)); err != nil {
				return err
			}
		}
		return nil
	})), topology.SourceConfig{})
	failed := false
	topo.AddBolt("flaky", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
		if in.Time == 2e9 && !failed {
			failed = true
			return fmt.Errorf("database away")
		}
		out.Emit(in)
		return nil
	})), topology.BoltConfig{}).Input("sensors", topology.Global())
	var out strings.Builder
	topo.AddBolt("print", operation.Stateless(file.NewSink(&out, particle.Second)), topology.BoltConfig{}).Input("flaky", topology.Global())
	if err := topo.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Print(out.String())
	fmt.Println("retried:", topo.Stats("sensors").Retried.Load())
	// Output:
	// t n=1i 1
	// t n=3i 3
	// t n=2i 2
	// retried: 1
}
