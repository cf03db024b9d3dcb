package mqtt_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// TestSink publishes particles to a topic template at QoS 1: a subscriber
// gets every one on its sensor's topic, and every tree completes only
// after the broker confirmed.
func TestSink(t *testing.T) {
	const n = 500
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	var mu sync.Mutex
	got := map[string]int{}
	o := paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("sink-sub")
	o.SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
		mu.Lock()
		defer mu.Unlock()
		got[m.Topic()]++
		assert.True(t, strings.HasPrefix(string(m.Payload()), "reading,sensor="), "%s", m.Payload())
	})
	sub := paho.NewClient(o)
	require.True(t, sub.Connect().WaitTimeout(10*time.Second))
	defer sub.Disconnect(100)
	require.True(t, sub.Subscribe("results/#", 1, nil).WaitTimeout(10*time.Second))

	sink, err := mqtt.NewSink(mqtt.SinkConfig{ConnConfig: mqtt.ConnConfig{Brokers: []string{broker.URL()}, ClientID: "sink"}, Topic: "results/{sensor}", MaxInflight: 16})
	require.NoError(t, err)
	topo := runSink(t, sink, nil, n, func(i int) string { return fmt.Sprint("s", i%3) }, nil)
	var acked int
	acked = int(topo.Stats("gen").Acked.Load())
	assert.Equal(t, n, acked)
	assert.Equal(t, uint64(n), sink.Stats().Confirmed.Load())
	waitFor(t, 10*time.Second, "every result", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got["results/s0"]+got["results/s1"]+got["results/s2"] == n
	})
}

func TestSinkTopic(t *testing.T) {
	s, err := mqtt.NewSink(mqtt.SinkConfig{ConnConfig: mqtt.ConnConfig{Brokers: []string{"tcp://x:1"}}, Topic: "out/{measurement}/{room}/x"})
	require.NoError(t, err)
	p := particle.Particle{Measurement: "temp", Tags: []particle.Tag{{Key: "room", Value: "k"}}}
	topic, err := s.Topic(&p)
	require.NoError(t, err)
	assert.Equal(t, "out/temp/k/x", topic)
	_, err = s.Topic(&particle.Particle{Measurement: "temp"})
	assert.ErrorIs(t, err, mqtt.ErrTopicTemplate)
	// A tag value fills one level: what would make more levels, or a
	// wildcard, is percent-encoded.
	for value, level := range map[string]string{"in/x": "in%2Fx", "a+b": "a%2Bb", "#": "%23", "50%": "50%25", "a\x00": "a%00", "$SYS": "$SYS"} {
		topic, err := s.Topic(&particle.Particle{Measurement: "temp", Tags: []particle.Tag{{Key: "room", Value: value}}})
		require.NoError(t, err)
		assert.Equal(t, "out/temp/"+level+"/x", topic)
	}
	_, err = mqtt.NewSink(mqtt.SinkConfig{ConnConfig: mqtt.ConnConfig{Brokers: []string{"tcp://x:1"}}, Topic: "out/#"})
	assert.Error(t, err)
}

// TestSinkBrokerRestart restarts the broker while a sink publishes: the
// sink waits for its reconnection instead of failing particles, publishes
// again what paho failed when the connection broke, and every tree
// completes, also those whose confirmation comes while no particle does.
func TestSinkBrokerRestart(t *testing.T) {
	const n = 300
	broker := mosquittotest.Start(t, mosquittotest.Config{Persistence: true})
	sink, err := mqtt.NewSink(mqtt.SinkConfig{ConnConfig: mqtt.ConnConfig{Brokers: []string{broker.URL()}, ClientID: "sink-restart",
		ReconnectWait: 10 * time.Millisecond, MaxReconnectInterval: 100 * time.Millisecond}, Topic: "results/{sensor}"})
	require.NoError(t, err)
	topo := runSink(t, sink, nil, n, func(int) string { return "s" }, func(i int, out topology.SourceEmitter) error {
		if i != n/2 {
			return nil
		}
		if err := out.Flush(); err != nil {
			return err
		}
		for sink.Stats().Confirmed.Load() == 0 {
			time.Sleep(5 * time.Millisecond) // the sink publishes what was flushed
		}
		broker.Restart()
		return nil
	})
	assert.Equal(t, uint64(n), topo.Stats("gen").Acked.Load())
	assert.Zero(t, topo.Stats("gen").Failed.Load(), "a broker away is no reason to fail a particle")
	assert.GreaterOrEqual(t, sink.Stats().Connects.Load(), uint64(2))
}

// runSink runs a topology in which a source emits n readings, tagged
// sensor=sensor(i) unless that is "", into sink, calling before(i) before
// reading i when set. It returns the topology once it stopped.
func runSink(t *testing.T, sink *mqtt.Sink, dead topology.DeadLetterSink, n int, sensor func(i int) string,
	before func(i int, out topology.SourceEmitter) error) *topology.Topology {
	t.Helper()
	topo, err := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true}, DeadLetters: dead})
	require.NoError(t, err)
	topo.AddSource("gen", topology.Single(topology.Retaining(func(ctx context.Context, out topology.SourceEmitter) error {
		for i := range n {
			if before != nil {
				if err := before(i, out); err != nil {
					return err
				}
			}
			p := particle.Particle{Time: int64(i), Measurement: "reading", Fields: []particle.Field{{Key: "v", Value: particle.Int(int64(i))}}}
			if v := sensor(i); v != "" {
				p.Tags = []particle.Tag{{Key: "sensor", Value: v}}
			}
			if err := out.EmitTracked(p, uint64(i)); err != nil {
				return err
			}
		}
		return nil
	})), topology.SourceConfig{})
	topo.AddBolt("publish", operation.Stateless(sink), topology.BoltConfig{}).Input("gen", topology.Global())
	require.NoError(t, topo.Run(context.Background()))
	return topo
}
