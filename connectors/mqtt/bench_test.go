package mqtt_test

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// BenchmarkIngest compares, on one stock Mosquitto in one run, a bare paho
// subscriber (QoS 1, automatic acknowledgements, persistent session) with
// a spool-mode Source feeding a topology with a 1s window, acking on. The
// publisher stays at most 500 messages ahead of what the subscriber
// acknowledged, so that the broker never drops beyond its queue; readings
// carry the time they were published, like a live feed.
func BenchmarkIngest(b *testing.B) {
	broker := mosquittotest.Start(b, mosquittotest.Config{})
	defer func() {
		if b.Failed() {
			b.Log(broker.Log())
		}
	}()
	const ahead = 500
	var bare, ingest time.Duration
	var total int
	for i := 0; b.Loop(); i++ {
		n := 20_000
		total += n
		bare += benchBare(b, broker.URL(), fmt.Sprint("bench/bare/", i), n, ahead)
		ingest += benchSource(b, broker.URL(), fmt.Sprint("bench/ingest/", i), n, ahead)
	}
	bareRate, ingestRate := float64(total)/bare.Seconds(), float64(total)/ingest.Seconds()
	b.ReportMetric(bareRate, "bare-msgs/s")
	b.ReportMetric(ingestRate, "ingest-msgs/s")
	b.ReportMetric(ingestRate/bareRate, "ratio")
}

func benchPublish(b *testing.B, url, topic string, n, ahead int, acked func() int) time.Time {
	o := paho.NewClientOptions().AddBroker(url).SetClientID(topic + "-pub")
	pub := paho.NewClient(o)
	require.True(b, pub.Connect().WaitTimeout(10*time.Second))
	defer pub.Disconnect(100)
	start := time.Now()
	var last paho.Token
	for i := range n {
		for i-acked() > ahead {
			time.Sleep(50 * time.Microsecond)
		}
		last = pub.Publish(topic, 1, false, fmt.Sprintf("reading,sensor=s%d v=%d %d", i%8, i, time.Now().UnixNano()))
	}
	require.True(b, last.WaitTimeout(20*time.Second))
	return start
}

func benchBare(b *testing.B, url, topic string, n, ahead int) time.Duration {
	var got atomic.Int64
	done := make(chan time.Time, 1)
	o := paho.NewClientOptions().AddBroker(url).SetClientID(topic + "-sub").SetCleanSession(false)
	o.SetDefaultPublishHandler(func(paho.Client, paho.Message) {
		if got.Add(1) == int64(n) {
			done <- time.Now()
		}
	})
	sub := paho.NewClient(o)
	require.True(b, sub.Connect().WaitTimeout(10*time.Second))
	defer sub.Disconnect(100)
	require.True(b, sub.Subscribe(topic, 1, nil).WaitTimeout(10*time.Second))
	start := benchPublish(b, url, topic, n, ahead, func() int { return int(got.Load()) })
	select {
	case end := <-done:
		return end.Sub(start)
	case <-time.After(20 * time.Second):
		b.Fatalf("bare subscriber got %d of %d messages", got.Load(), n)
		return 0
	}
}

func benchSource(b *testing.B, url, topic string, n, ahead int) time.Duration {
	src, err := mqtt.NewSource(mqtt.Config{
		ConnConfig: mqtt.ConnConfig{Brokers: []string{url}, ClientID: topic + "-sub"},
		Topics:     []string{topic},
		StateDir:   b.TempDir(),
	})
	require.NoError(b, err)
	// With a 1s window, a second's worth of messages is pending.
	topo, err := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true, MaxPending: 1 << 17}})
	require.NoError(b, err)
	topo.AddSource("mqtt", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("out", operation.Stateless(file.NewSink(io.Discard, particle.Nanosecond)),
		topology.BoltConfig{Buffer: syncbuffer.Config{Window: time.Second}}).Input("mqtt", topology.Global())
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- topo.Run(ctx) }()
	for src.Stats().Connects.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	st := src.Stats()
	start := benchPublish(b, url, topic, n, ahead, func() int { return int(st.Acked.Load()) })
	for st.Emitted.Load() < uint64(n) {
		time.Sleep(100 * time.Microsecond)
	}
	elapsed := time.Since(start)

	cancel()
	require.NoError(b, <-errc)
	require.NoError(b, src.Close())
	return elapsed
}
