package stream_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/stream"
	"github.com/sensorstorm/sensorstorm/topology"
)

// A recording delivered out of order, replayed as fast as possible: the
// half-hour mean temperature of node 1, with 5 s of disorder absorbed.
func Example() {
	src, err := replay.New(replay.Config{Inputs: []replay.Input{{Path: "../testdata/library1-disordered.lp"}}, Speed: replay.Max})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = stream.From(src).
		OutOfOrder(5*time.Second).
		Filter(func(p *particle.Particle) bool { node, _ := p.Tag("node"); return node == "1" }).
		KeyBy("node").
		Window(stream.Tumbling(30*time.Minute), stream.Mean("temperature"), stream.Count("temperature")).
		ForEach(func(p particle.Particle) {
			mean, _ := p.Field("temperature_mean")
			n, _ := p.Field("temperature_count")
			fmt.Printf("%s  %.2f °C over %d readings\n", p.EventTime().UTC().Format(time.TimeOnly), mean.FloatValue(), n.IntValue())
		}).
		Run(context.Background())
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// 17:30:00  22.02 °C over 15 readings
	// 18:00:00  22.01 °C over 26 readings
	// 18:30:00  22.00 °C over 22 readings
	// 19:00:00  22.00 °C over 26 readings
	// 19:30:00  21.99 °C over 13 readings
}

// Two sensors merged into one particle per minute, written as line
// protocol: the key names the sensors.
func ExampleStream_Align() {
	reading := func(sensor string, sec int64, celsius float64) particle.Particle {
		return particle.Particle{Time: sec * 1e9, Measurement: "room", Tags: []particle.Tag{{Key: "sensor", Value: sensor}},
			Fields: []particle.Field{{Key: "temperature", Value: particle.Float(celsius)}}}
	}
	readings := []particle.Particle{
		reading("a", 60, 21), reading("b", 75, 19),
		reading("a", 130, 22), reading("b", 125, 20), // 5 s out of order
	}
	src := topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		for _, p := range readings {
			if err := out.Emit(p); err != nil {
				return err
			}
		}
		return nil
	})
	err := stream.From(src).
		OutOfOrder(10*time.Second).
		KeyBy("sensor").
		Align(time.Minute, "temperature").
		WriteLines(os.Stdout, particle.Second).
		Run(context.Background())
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// room a_temperature=21,b_temperature=19 60
	// room a_temperature=22,b_temperature=20 120
}
