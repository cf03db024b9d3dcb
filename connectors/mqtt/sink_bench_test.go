package mqtt_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// BenchmarkSink publishes particles until a subscriber got them all: at
// once (no checkpoints, or at_least_once), and at checkpoints, one every
// 1000 particles, each followed by its commit. It reports the messages a
// second that reach the subscriber.
func BenchmarkSink(b *testing.B) {
	const n, every = 20000, 1000
	for _, atCheckpoints := range []bool{false, true} {
		b.Run(fmt.Sprint("at_checkpoints=", atCheckpoints), func(b *testing.B) {
			// A stock broker drops what it queues beyond 1000 messages for
			// a subscriber that falls behind.
			broker := mosquittotest.Start(b, mosquittotest.Config{MaxQueued: 2 * n})
			sub := broker.Subscribe(b, "bench-sub", "results/#")
			ps := make([]particle.Particle, n)
			for i := range ps {
				ps[i] = particle.Particle{Time: int64(i), Measurement: "reading", Tags: []particle.Tag{{Key: "sensor", Value: "s"}},
					Fields: []particle.Field{{Key: "v", Value: particle.Int(int64(i))}}}
			}
			ctx := context.Background()
			start := time.Now()
			for r := range b.N {
				sink, err := mqtt.NewSink(mqtt.SinkConfig{ConnConfig: mqtt.ConnConfig{Brokers: []string{broker.URL()}, ClientID: "bench-sink"},
					Topic: fmt.Sprintf("results/%d", r)})
				if err != nil {
					b.Fatal(err)
				}
				out := &connectortest.Emitter{Checkpointed: atCheckpoints}
				for i, p := range ps {
					if err := sink.Process(ctx, p, out); err != nil {
						b.Fatal(err)
					}
					if atCheckpoints && (i+1)%every == 0 {
						if err := sink.Snapshot(state.NewWriter(nil)); err != nil {
							b.Fatal(err)
						}
						sink.Committed()
					}
				}
				if err := sink.Flush(ctx, out); err != nil {
					b.Fatal(err)
				}
				if err := sink.Close(); err != nil {
					b.Fatal(err)
				}
				topic := fmt.Sprintf("results/%d", r)
				for len(sub.Payloads(topic)) < n {
					time.Sleep(time.Millisecond)
				}
			}
			b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}
