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
	"github.com/sensorstorm/sensorstorm/ops"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// TestBackfillWithPauses publishes readings stamped three days in the
// past through a stock Mosquitto, in bursts separated by pauses 2s longer
// than the idle timeout, and the same readings without the pauses, into
// a bolt that passes them on and a one-minute window mean: both runs
// output every reading, none late or behind, and the same output: a pause
// advances event time by the time passed, which closes no window the
// feed has not reached.
func TestBackfillWithPauses(t *testing.T) {
	const bursts, perBurst = 4, 2000
	const n = bursts * perBurst
	const idle = time.Second
	// Ten seconds into a minute: the readings, 8s of them, fall in one
	// window.
	base := time.Now().Add(-72*time.Hour).Truncate(time.Minute).UnixNano() + 10*int64(time.Second)
	run := func(name string, pause time.Duration) []string {
		// A broker each: the other run's persistent session would queue.
		broker := mosquittotest.Start(t, mosquittotest.Config{})
		rec := &recorder{}
		var mu sync.Mutex
		var means []string
		src, err := mqtt.NewSource(sourceConfig(broker.URL(), name, t.TempDir()))
		require.NoError(t, err)
		topo, err := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true}})
		require.NoError(t, err)
		buf := syncbuffer.Config{Window: 100 * time.Millisecond, IdleTimeout: idle}
		topo.AddSource("mqtt", topology.Single(src), topology.SourceConfig{})
		topo.AddBolt("raw", rec.factory(), topology.BoltConfig{Buffer: buf}).Input("mqtt", topology.Global())
		topo.AddBolt("mean", func() operation.Operation {
			op, err := ops.NewStats(ops.StatsConfig{Size: time.Minute, Fields: []string{"n"}, Aggregates: []string{"count", "mean"}})
			require.NoError(t, err)
			return op
		}, topology.BoltConfig{Buffer: buf}).Input("mqtt", topology.Global())
		topo.AddBolt("out", operation.Stateless(operation.Func(func(_ context.Context, p particle.Particle, _ operation.Emitter) error {
			line, err := particle.AppendLineProtocol(nil, &p, particle.Nanosecond)
			mu.Lock()
			means = append(means, string(line))
			mu.Unlock()
			return err
		})), topology.BoltConfig{}).Input("mean", topology.Global())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- topo.Run(ctx) }()
		st := src.Stats()
		waitFor(t, 10*time.Second, "first connection", func() bool { return st.Connects.Load() > 0 })

		pub := newPublisher(t, broker.URL(), name+"-pub")
		send := func(i, at int) paho.Token {
			return pub.client.Publish(topic(max(i, 0)), 1, false, fmt.Sprintf("reading n=%di %d", i, base+int64(at)*int64(time.Millisecond)))
		}
		var last paho.Token
		for i := range n {
			if i > 0 && i%perBurst == 0 {
				require.True(t, last.WaitTimeout(10*time.Second))
				waitFor(t, 10*time.Second, "the burst taken", func() bool { return st.Emitted.Load() == uint64(i) })
				time.Sleep(pause) // the deliberate pause
			}
			for i-int(st.Acked.Load()) > 500 {
				time.Sleep(100 * time.Microsecond)
			}
			// Each run of 20 readings comes in reverse time order: within
			// the window, and in order across bursts.
			last = send(i, i/20*20+19-i%20)
		}
		// A reading two minutes on closes the readings' window.
		require.True(t, send(-1, n+120_000).WaitTimeout(10*time.Second))
		waitFor(t, 20*time.Second, "every reading out", func() bool { return rec.count.Load() == n })
		waitFor(t, 20*time.Second, "the window's mean out", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(means) > 0
		})
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, src.Close())
		for _, b := range []string{"raw", "mean"} {
			assert.Zero(t, topo.Stats(b).Late.Load(), "%s: %s: late", name, b)
			assert.Zero(t, topo.Stats(b).Behind.Load(), "%s: %s: behind", name, b)
		}
		assert.Len(t, rec.seen(t), n, "%s: readings", name)
		assert.NotContains(t, broker.Log(), "dropped", "%s: the broker dropped messages", name)
		var out []string
		for _, p := range rec.out[0] {
			v, _ := p.Field("n")
			out = append(out, fmt.Sprint(v.IntValue(), " ", p.Time))
		}
		return append(out, means...)
	}
	straight := run("backfill-straight", 0)
	paused := run("backfill-paused", idle+2*time.Second)
	assert.Equal(t, straight, paused, "the output with pauses")
	// One mean of every reading: no pause closed the window early.
	assert.Contains(t, strings.Join(paused, "\n"), fmt.Sprintf(" n_count=%di,n_mean=%g ", n, float64(n-1)/2))
}
