package mqtt_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
)

// publishAll publishes payloads to topic at QoS 1 and waits for the
// broker's confirmations.
func (p *publisher) publishAll(topic string, payloads ...[]byte) {
	p.t.Helper()
	for _, b := range payloads {
		tok := p.client.Publish(topic, 1, false, b)
		require.True(p.t, tok.WaitTimeout(60*time.Second), "publish not confirmed")
		require.NoError(p.t, tok.Error())
	}
}

// TestStaleSubscriptions runs a source on sensors/#, then one with the same
// client id on other/#: the broker kept the first subscription in the
// persistent session. With a state directory the second run unsubscribes
// from it; without one it still drops what it did not ask for.
func TestStaleSubscriptions(t *testing.T) {
	for _, withState := range []bool{true, false} {
		t.Run(fmt.Sprint("state dir ", withState), func(t *testing.T) {
			broker := mosquittotest.Start(t, mosquittotest.Config{})
			dir := ""
			mode := mqtt.ModeReceipt
			if withState {
				dir, mode = t.TempDir(), mqtt.ModeSpool
			}
			cfg := sourceConfig(broker.URL(), "stale", dir)
			cfg.Mode, cfg.Payload.TopicTags = mode, ""
			first := startPipeline(t, cfg, &recorder{}, 0, 1)
			waitFor(t, 10*time.Second, "first connection", func() bool { return first.src.Stats().Connects.Load() > 0 })
			first.stop(t)

			logger, log := logged()
			cfg.Topics, cfg.Logger = []string{"other/#"}, logger
			rec := &recorder{}
			second := startPipeline(t, cfg, rec, 0, 1)
			waitFor(t, 10*time.Second, "second connection", func() bool { return second.src.Stats().Connects.Load() > 0 })
			pub := newPublisher(t, broker.URL(), "stale-pub")
			pub.publishAll("sensors/x", []byte("m n=1i 1"))
			pub.publishAll("other/x", []byte("m n=2i 2"))
			// The last reading waits in the buffer for newer ones: stop
			// drains it.
			waitFor(t, 10*time.Second, "other/x", func() bool { return second.src.Stats().Emitted.Load() == 1 })
			second.stop(t)

			assert.Equal(t, map[int64]int{2: 1}, rec.seen(t))
			st := second.src.Stats()
			if withState {
				assert.Contains(t, log.String(), `msg="mqtt: unsubscribed from filters no longer configured" client_id=stale topics=[sensors/#]`)
				assert.Equal(t, uint64(1), st.Received.Load(), "the broker sent sensors/x")
			} else {
				assert.Equal(t, uint64(2), st.Received.Load())
				assert.Equal(t, uint64(1), st.Unwanted.Load())
				assert.Equal(t, uint64(2), st.Acked.Load())
				assert.Contains(t, log.String(), "topic=sensors/x")
			}
		})
	}
}

// TestPayloadTooLarge sends payloads above MaxPayload between good ones:
// each is dead-lettered as bad input with its size and a short prefix,
// acknowledged, and never decoded.
func TestPayloadTooLarge(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	for _, mode := range []mqtt.Mode{mqtt.ModeSpool, mqtt.ModeTree} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := sourceConfig(broker.URL(), "large-"+mode.String(), t.TempDir())
			cfg.Mode, cfg.MaxPayload, cfg.Topics = mode, 1000, []string{"large/" + mode.String() + "/#"}
			cfg.Payload.TopicTags = ""
			rec := &recorder{}
			p := startPipeline(t, cfg, rec, 0, 1)
			waitFor(t, 10*time.Second, "first connection", func() bool { return p.src.Stats().Connects.Load() > 0 })
			pub := newPublisher(t, broker.URL(), "large-pub-"+mode.String())
			big := append([]byte("m n=9i 9\n"), bytes.Repeat([]byte("x"), 5000)...)
			pub.publishAll("large/"+mode.String()+"/a", []byte("m n=1i 1"), big, []byte("m n=2i 2"), big[:1001])
			waitFor(t, 10*time.Second, "every message", func() bool {
				st := p.src.Stats()
				return st.Emitted.Load() == 2 && st.Invalid.Load() == 2
			})
			p.stop(t)
			assert.Equal(t, uint64(4), p.src.Stats().Acked.Load())

			assert.Equal(t, map[int64]int{1: 1, 2: 1}, rec.seen(t))
			assert.Equal(t, uint64(2), p.src.Stats().Invalid.Load())
			dead := p.dead.All()
			require.Len(t, dead, 2)
			for i, want := range []string{"5009 bytes", "1001 bytes"} {
				assert.ErrorIs(t, dead[i].Err, mqtt.ErrPayloadTooLarge)
				assert.ErrorContains(t, dead[i].Err, "large/"+mode.String()+"/a:1: mqtt: payload too large: "+want+", more than 1000")
				assert.Equal(t, big[:256], dead[i].Raw)
			}
		})
	}
}

// TestLargePayloadsMemory sends 5 payloads of 20 MB at the default limit:
// they are dead-lettered, and nothing of them stays on the heap.
func TestLargePayloadsMemory(t *testing.T) {
	const n, size = 5, 20 << 20
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	p := startPipeline(t, sourceConfig(broker.URL(), "memory", t.TempDir()), &recorder{}, 0, 1)
	waitFor(t, 10*time.Second, "first connection", func() bool { return p.src.Stats().Connects.Load() > 0 })
	pub := newPublisher(t, broker.URL(), "memory-pub")
	big := bytes.Repeat([]byte("m v=1 "), size/6)
	for range n {
		pub.publishAll("sensors/r/s", big)
	}
	big = nil
	waitFor(t, 60*time.Second, "every message", func() bool { return p.src.Stats().Invalid.Load() == n })
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("heap in use after %d payloads of %d MiB: %.1f MiB", n, size>>20, float64(ms.HeapInuse)/(1<<20))
	assert.Less(t, ms.HeapInuse, uint64(48<<20))
	assert.Len(t, p.dead.All(), n)
	assert.Equal(t, uint64(n), p.src.Stats().Acked.Load())
}

// TestMaxBufferedBytes runs a slow pipeline fed 16 MB in messages of
// 200 KB: what the source takes for the pipeline stays within
// MaxBufferedBytes.
func TestMaxBufferedBytes(t *testing.T) {
	const n, size, limit = 80, 200_000, 1 << 20
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	cfg := sourceConfig(broker.URL(), "bytes", t.TempDir())
	cfg.MaxBufferedBytes, cfg.Payload.TopicTags = limit, ""
	rec := &recorder{delay: 20 * time.Millisecond}
	p := startPipeline(t, cfg, rec, 0, 1)
	waitFor(t, 10*time.Second, "first connection", func() bool { return p.src.Stats().Connects.Load() > 0 })
	pub := newPublisher(t, broker.URL(), "bytes-pub")
	line := []byte(fmt.Sprintf("m n=%di,s=\"%s\" 1", 0, bytes.Repeat([]byte("x"), size)))
	var last paho.Token
	for range n {
		last = pub.client.Publish("sensors/r/s", 1, false, line)
	}
	require.True(t, last.WaitTimeout(60*time.Second))
	waitFor(t, 60*time.Second, "every message", func() bool { return p.src.Stats().Emitted.Load() == n })
	p.stop(t)
	assert.Equal(t, int64(n), rec.count.Load())
	peak := p.src.Stats().PeakQueuedBytes.Load()
	t.Logf("peak queued %d KB, limit %d KB", peak/1000, limit/1000)
	// The backlog's part in memory, and a batch read back from disk.
	assert.LessOrEqual(t, peak, int64(2*limit))
}

// TestSinkBadInput publishes particles some of which lack the tag the
// topic template names: those are dead-lettered once and acknowledged,
// never failed and retried, and the others are published.
func TestSinkBadInput(t *testing.T) {
	const n = 100
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	dead := &connectortest.DeadLetters{}
	sink, err := mqtt.NewSink(mqtt.SinkConfig{ConnConfig: mqtt.ConnConfig{Brokers: []string{broker.URL()}, ClientID: "sink-bad"},
		Topic: "results/{sensor}"})
	require.NoError(t, err)
	topo := runSink(t, sink, dead, n, func(i int) string {
		if i%2 == 0 {
			return "s"
		}
		return ""
	}, nil)
	assert.Equal(t, uint64(n), topo.Stats("gen").Acked.Load())
	assert.Zero(t, topo.Stats("gen").Failed.Load())
	assert.Equal(t, uint64(n/2), sink.Stats().Confirmed.Load())
	assert.Equal(t, uint64(n/2), sink.Stats().Invalid.Load())
	letters := dead.All()
	require.Len(t, letters, n/2)
	for _, l := range letters {
		assert.ErrorIs(t, l.Err, mqtt.ErrTopicTemplate)
		assert.ErrorIs(t, l.Err, operation.ErrRejected)
		assert.Equal(t, "rejected", l.Reason)
		require.NotNil(t, l.Particle)
	}
}
