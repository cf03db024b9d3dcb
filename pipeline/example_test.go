package pipeline_test

import (
	"context"
	"fmt"

	"github.com/sensorstorm/sensorstorm/pipeline"
)

// A pipeline from YAML: the two-hour mean temperature of a real recording,
// replayed as fast as possible.
func ExamplePipeline_Build() {
	p, err := pipeline.Parse([]byte(`
sources:
  - name: wsn
    file: {paths: [testdata/library1-r1.lp], speed: max}
bolts:
  - name: mean2h
    input: wsn
    window: 5s
    op: {type: window-mean, size: 2h, fields: [temperature]}
  - name: out
    input: {from: mean2h, grouping: global}
    sink: {file: "-", precision: s}
`), "mean.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	built, err := p.Build(pipeline.Options{Dir: ".."}) // paths are relative to the repository
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = built.Run(context.Background())
	// Output:
	// wsn temperature_mean=21.813383720930236 1163440800
	// wsn temperature_mean=21.45455520786772 1163448000
	// wsn temperature_mean=21.154097191261688 1163455200
	// wsn temperature_mean=20.981628430049486 1163462400
}

// Parse reports every problem with its line and column.
func ExampleParse() {
	_, err := pipeline.Parse([]byte(`
sources:
  - name: sensors
    mqtt: {broker: tcp://localhost:1883, topics: [sensors/#], qos: 4, mode: receipt}
bolts:
  - name: mean
    input: sensor
    op: {type: window-mean, size: 10 s}
`), "p.yaml")
	fmt.Println(err)
	// Output:
	// p.yaml:4:68: source "sensors": mqtt: qos: QoS "4": want 0, 1 or 2
	// p.yaml:7:12: bolt "mean": input from unknown component "sensor" (known: mean, sensors)
	// p.yaml:8:35: bolt "mean": op window-mean: size: want a duration such as 5s or 10m, got "10 s"
}
