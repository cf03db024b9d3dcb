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
// and starts a source on it twice with the same client id and state: the
// broker sends the retained message at each start, as it does at every
// subscription, and each run counts it as retained and takes it, so the
// second run emits it again (the README says so). A reading published
// while the source runs arrives without the flag, counted apart.
func TestRetainedMessages(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	pub := newPublisher(t, broker.URL(), "retained-pub")
	at := time.Now().UnixNano()
	tok := pub.client.Publish(topic(1), 1, true, fmt.Sprintf("reading n=1i %d", at))
	require.True(t, tok.WaitTimeout(10*time.Second))
	require.NoError(t, tok.Error())

	state := t.TempDir()
	for run, tc := range []struct{ live int }{{live: 1}, {live: 0}} {
		rec := &recorder{}
		p := startPipeline(t, sourceConfig(broker.URL(), "retained", state), rec, 10*time.Millisecond, 1)
		waitFor(t, 10*time.Second, "the retained message", func() bool { return p.src.Stats().Emitted.Load() >= 1 })
		for i := range tc.live {
			tok := pub.client.Publish(topic(2), 1, false, fmt.Sprintf("reading n=%di %d", 2+i, at+1))
			require.True(t, tok.WaitTimeout(10*time.Second))
		}
		waitFor(t, 10*time.Second, "the live message", func() bool { return p.src.Stats().Emitted.Load() >= uint64(1+tc.live) })
		p.stop(t)
		st := p.src.Stats()
		assert.Equal(t, uint64(1), st.Retained.Load(), "run %d: the retained message, flagged", run)
		assert.Equal(t, uint64(1+tc.live), st.Received.Load(), "run %d", run)
		assert.Equal(t, uint64(1+tc.live), st.Emitted.Load(), "run %d: the retained message taken again", run)
	}
}
