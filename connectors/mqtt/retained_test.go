package mqtt_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
)

// TestRetainedMessages publishes a retained reading to a real Mosquitto
// and runs a source on it three times with the same client id and state.
// The first run subscribes and takes the retained message, counted as
// such; the second finds its session kept by the broker, does not
// subscribe again, and so is not sent the retained message again: it
// takes only what is published meanwhile. The third adds a filter and
// subscribes again, which makes the broker send the retained message
// again: it is taken again, a duplicate (docs/ingest.md says so).
func TestRetainedMessages(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	pub := newPublisher(t, broker.URL(), "retained-pub")
	at := time.Now().UnixNano()
	publish := func(topic string, n int, retain bool) {
		t.Helper()
		tok := pub.client.Publish(topic, 1, retain, fmt.Sprintf("reading n=%di %d", n, at+int64(n)))
		require.True(t, tok.WaitTimeout(10*time.Second))
		require.NoError(t, tok.Error())
	}
	publish(topic(1), 0, true)

	state := t.TempDir()
	for run, tc := range []struct {
		topics   []string
		retained uint64
	}{
		{topics: []string{"sensors/#"}, retained: 1},
		{topics: []string{"sensors/#"}, retained: 0},
		{topics: []string{"sensors/#", "other/#"}, retained: 1},
	} {
		cfg := sourceConfig(broker.URL(), "retained", state)
		cfg.Topics = tc.topics
		p := startPipeline(t, cfg, &recorder{}, 10*time.Millisecond, 1)
		waitFor(t, 10*time.Second, "connected", func() bool { return p.src.Stats().Connects.Load() > 0 })
		publish(topic(2), 1+run, false)
		want := 1 + tc.retained
		waitFor(t, 10*time.Second, "the messages", func() bool { return p.src.Stats().Emitted.Load() >= want })
		p.stop(t)
		st := p.src.Stats()
		assert.Equal(t, tc.retained, st.Retained.Load(), "run %d: retained messages", run)
		assert.Equal(t, want, st.Received.Load(), "run %d: messages", run)
		assert.Equal(t, want, st.Emitted.Load(), "run %d: particles", run)
	}
}
