package mqtt_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/particle"
)

// TestEndToEnd sends 50k line-protocol messages from a separate publisher
// through a stock Mosquitto into a spool-mode source and two bolt
// instances: each reading arrives once, in event-time order per instance.
func TestEndToEnd(t *testing.T) {
	const n = 50_000
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	rec := &recorder{}
	p := startPipeline(t, sourceConfig(broker.URL(), "e2e", t.TempDir()), rec, 100*time.Millisecond, 2)
	waitFor(t, 10*time.Second, "first connection", func() bool { return p.src.Stats().Connects.Load() > 0 })
	pub := newPublisher(t, broker.URL(), "e2e-pub")
	start := time.Now()
	pub.publish(n, 500, func() int { return int(p.src.Stats().Acked.Load()) })
	waitFor(t, 30*time.Second, "every message emitted", func() bool { return p.src.Stats().Emitted.Load() >= n })
	t.Logf("%d messages in %v: %.0f msgs/s", n, time.Since(start), n/time.Since(start).Seconds())
	p.stop(t)

	seen := rec.seen(t)
	require.Len(t, seen, n)
	for i := range int64(n) {
		assert.Equal(t, 1, seen[i], "reading %d", i)
	}
	st := p.src.Stats()
	assert.Equal(t, uint64(n), st.Acked.Load())
	assert.Equal(t, uint64(n), st.Completed.Load())
	assert.Zero(t, st.Invalid.Load())
	sp, ok := p.src.SpoolStats()
	assert.True(t, ok, "spool mode has a spool")
	assert.Equal(t, uint64(n), sp.Appended)
	assert.Zero(t, sp.Pending, "every message completed")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, ps := range rec.out {
		assert.NotEmpty(t, ps, "instance %d got nothing", i)
		room, _ := ps[0].Tag("room")
		assert.NotEmpty(t, room, "topic segments become tags")
	}
}

// TestBrokerRestart stops Mosquitto (with persistence) mid-stream and
// starts it again: the source reconnects, resubscribes and loses nothing,
// also of what was published while it was away.
func TestBrokerRestart(t *testing.T) {
	const n = 4000
	rec := &recorder{}
	broker := mosquittotest.Start(t, mosquittotest.Config{Persistence: true})
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(broker.Log())
			seen := rec.seen(t)
			var missing []int64
			for i := range int64(n) {
				if seen[i] == 0 {
					missing = append(missing, i)
				}
			}
			if len(missing) > 0 {
				t.Logf("missing %d readings, from %d to %d", len(missing), missing[0], missing[len(missing)-1])
			}
		}
	})
	lost := make(chan error, 10)
	cfg := sourceConfig(broker.URL(), "restart", t.TempDir())
	cfg.OnConnectionLost = func(err error) { lost <- err }
	p := startPipeline(t, cfg, rec, 50*time.Millisecond, 1)
	waitFor(t, 10*time.Second, "first connection", func() bool { return p.src.Stats().Connects.Load() > 0 })
	pub := newPublisher(t, broker.URL(), "restart-pub")
	received := func() int { return int(p.src.Stats().Acked.Load()) }
	pub.publish(n/2, 500, received)
	// Mosquitto 2.0 loses the messages it has in flight to a client when
	// it is stopped (eclipse-mosquitto/mosquitto#2811): stop it once they
	// are acknowledged. What is published from then on is queued for the
	// session while the source is away.
	waitFor(t, 10*time.Second, "first half acknowledged", func() bool { return received() >= n/2 })
	broker.Restart()
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("connection loss not reported")
	}
	// The publisher's own stored messages would be resent in any order.
	waitFor(t, 10*time.Second, "publisher reconnected", pub.client.IsConnectionOpen)
	pub.publish(n/2, 500, received)
	pub.flushWindow()
	waitFor(t, 30*time.Second, "every reading", func() bool { return len(rec.seen(t)) == n })
	p.stop(t)
	assert.GreaterOrEqual(t, p.src.Stats().Connects.Load(), uint64(2))
	dups := 0
	for _, c := range rec.seen(t) {
		dups += c - 1
	}
	t.Logf("duplicates after the broker restart: %d", dups)
}

// TestSlowPipeline runs a bolt that takes 1ms per particle behind a small
// buffer with a 1s keepalive: the connection holds and memory stays
// bounded by MaxBuffered plus what the broker sends unacknowledged.
func TestSlowPipeline(t *testing.T) {
	const n = 2000
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	rec := &recorder{delay: time.Millisecond}
	cfg := sourceConfig(broker.URL(), "slow", t.TempDir())
	cfg.KeepAlive, cfg.PingTimeout, cfg.MaxBuffered = time.Second, time.Second, 50
	p := startPipeline(t, cfg, rec, 50*time.Millisecond, 1)
	waitFor(t, 10*time.Second, "first connection", func() bool { return p.src.Stats().Connects.Load() > 0 })
	pub := newPublisher(t, broker.URL(), "slow-pub")
	pub.publish(n, 500, func() int { return int(p.src.Stats().Acked.Load()) })
	pub.flushWindow()
	waitFor(t, 30*time.Second, "every reading", func() bool { return len(rec.seen(t)) >= n })
	p.stop(t)
	st := p.src.Stats()
	assert.Zero(t, st.ConnectionsLost.Load(), "keepalive disconnect")
	// In memory: the backlog's part (MaxBuffered), a batch read back from
	// disk (at most as many), and what the broker sends unacknowledged:
	// its in-flight window, which Mosquitto 2.0.11 lets grow up to what
	// the publisher is ahead (500) after bursts of acknowledgements. The
	// rest waited on disk, acknowledged.
	assert.LessOrEqual(t, st.PeakBuffered.Load(), int64(2*cfg.MaxBuffered+500+mosquittotest.StockMaxInflight))
	bl, ok := p.src.BacklogStats()
	require.True(t, ok)
	t.Logf("peak buffered %d (max buffered %d), %d read back from disk", st.PeakBuffered.Load(), cfg.MaxBuffered, bl.ReadBack)
	assert.NotZero(t, bl.ReadBack, "the slow pipeline read its backlog back from disk")
	assert.Zero(t, bl.Records, "the backlog drained")
	assert.Len(t, rec.seen(t), n)
}

// TestStalledPipelineBacklogOnDisk stalls the pipeline for longer than
// memory holds (a destination that does not answer) while a stock
// Mosquitto feeds it: the source goes on acknowledging every message once
// durable, the backlog spills to disk and grows, and when the stall ends
// it drains in order, with nothing late, lost or dropped by the broker.
func TestStalledPipelineBacklogOnDisk(t *testing.T) {
	const n = 10_000
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	rec := &recorder{gate: make(chan struct{})}
	cfg := sourceConfig(broker.URL(), "stalled", t.TempDir())
	cfg.MaxBuffered = 100
	p := startPipeline(t, cfg, rec, 50*time.Millisecond, 1)
	waitFor(t, 10*time.Second, "first connection", func() bool { return p.src.Stats().Connects.Load() > 0 })
	pub := newPublisher(t, broker.URL(), "stalled-pub")
	// The publisher stays within the broker's queue of what the source
	// acknowledged: it would wait for ever if the stall stopped the
	// acknowledgements.
	pub.publish(n, 900, func() int { return int(p.src.Stats().Acked.Load()) })
	pub.flushWindow()
	waitFor(t, 30*time.Second, "every message acknowledged during the stall", func() bool {
		return p.src.Stats().Acked.Load() == n+1
	})
	bl, ok := p.src.BacklogStats()
	require.True(t, ok)
	assert.Greater(t, bl.OnDisk, int64(n/2), "most of the backlog on disk")
	assert.Greater(t, bl.Bytes, int64(0))
	assert.NotZero(t, bl.Oldest)
	assert.LessOrEqual(t, p.src.Stats().PeakBuffered.Load(), int64(2*cfg.MaxBuffered+900+mosquittotest.StockMaxInflight))
	close(rec.gate)
	waitFor(t, 60*time.Second, "every reading", func() bool { return len(rec.seen(t)) >= n })
	p.stop(t)
	bl, _ = p.src.BacklogStats()
	assert.Zero(t, bl.Records, "the backlog drained")
	assert.NotZero(t, bl.ReadBack)
	assert.Len(t, rec.seen(t), n)
	assert.Zero(t, p.topo.Stats("out").Late.Load()+p.topo.Stats("out").Behind.Load(), "a drained backlog is not late")
	assert.NotContains(t, broker.Log(), "dropped", "the broker dropped messages")
}

// TestBadPayloads interleaves malformed payloads with good ones: each bad
// line is dead-lettered with its topic and position, and with that line
// alone, not its whole message; the good lines of the same payload go
// through, and every message is acknowledged.
func TestBadPayloads(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	rec := &recorder{}
	p := startPipeline(t, sourceConfig(broker.URL(), "bad", t.TempDir()), rec, 50*time.Millisecond, 1)
	waitFor(t, 10*time.Second, "first connection", func() bool { return p.src.Stats().Connects.Load() > 0 })
	pub := newPublisher(t, broker.URL(), "bad-pub")
	const n = 300
	var last interface{ Wait() bool }
	good := 0
	for i := range n {
		var payload string
		switch i % 3 {
		case 0:
			payload = pub.line(good)
			good++
		case 1:
			payload = "reading n=oops"
		case 2:
			payload = pub.line(good) + "\nreading,broken\n" + pub.line(good+1)
			good += 2
		}
		last = pub.client.Publish(fmt.Sprintf("sensors/r/s%d", i), 1, false, payload)
	}
	last.Wait()
	pub.next = good
	pub.flushWindow()
	waitFor(t, 20*time.Second, "every message", func() bool { return p.src.Stats().Completed.Load() >= n })
	p.stop(t)
	assert.Len(t, rec.seen(t), good)
	st := p.src.Stats()
	assert.Equal(t, uint64(2*n/3), st.Invalid.Load())
	assert.Equal(t, uint64(n+1), st.Acked.Load())
	dead := p.dead.All()
	require.Len(t, dead, 2*n/3)
	for _, d := range dead {
		var de *particle.DecodeError
		require.True(t, errors.As(d.Err, &de), "%v", d.Err)
		assert.Regexp(t, `^sensors/r/s\d+$`, de.Source)
		if string(d.Raw) != "reading n=oops" {
			assert.Equal(t, "reading,broken", string(d.Raw), "the bad line of three")
			assert.Equal(t, 2, de.Line, "the bad line of three")
		}
	}
}

// TestModes runs the tree and receipt modes: every message arrives and is
// acknowledged.
func TestModes(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	for _, mode := range []mqtt.Mode{mqtt.ModeTree, mqtt.ModeReceipt} {
		t.Run(mode.String(), func(t *testing.T) {
			const n = 1000
			rec := &recorder{}
			cfg := sourceConfig(broker.URL(), "mode-"+mode.String(), "")
			cfg.Mode = mode
			cfg.Topics = []string{"modes/" + mode.String() + "/#"}
			cfg.Payload.TopicTags = ""
			p := startPipeline(t, cfg, rec, 0, 1)
			waitFor(t, 10*time.Second, "first connection", func() bool { return p.src.Stats().Connects.Load() > 0 })
			pub := newPublisher(t, broker.URL(), "mode-pub-"+mode.String())
			for i := range n {
				pub.client.Publish("modes/"+mode.String()+"/x", 1, false, fmt.Sprintf("reading,sensor=s%d n=%di %d", i%3, i, pub.base+int64(i)))
			}
			waitFor(t, 20*time.Second, "every message emitted", func() bool { return p.src.Stats().Emitted.Load() >= n })
			p.stop(t)
			assert.Len(t, rec.seen(t), n)
			assert.Equal(t, uint64(n), p.src.Stats().Acked.Load())
			_, ok := p.src.SpoolStats()
			assert.False(t, ok, "no spool in mode %s", mode)
		})
	}
}

// TestSharedSubscription splits a feed between two sources.
func TestSharedSubscription(t *testing.T) {
	const n = 1000
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	rec := &recorder{}
	var ps []*pipeline
	for i := range 2 {
		cfg := sourceConfig(broker.URL(), fmt.Sprint("shared-", i), t.TempDir())
		cfg.Topics = []string{"$share/g/sensors/#"}
		ps = append(ps, startPipeline(t, cfg, rec, 50*time.Millisecond, 1))
	}
	for _, p := range ps {
		waitFor(t, 10*time.Second, "first connection", func() bool { return p.src.Stats().Connects.Load() > 0 })
	}
	pub := newPublisher(t, broker.URL(), "shared-pub")
	pub.publish(n, 500, func() int { return int(ps[0].src.Stats().Acked.Load() + ps[1].src.Stats().Acked.Load()) })
	waitFor(t, 20*time.Second, "every message emitted", func() bool {
		return ps[0].src.Stats().Emitted.Load()+ps[1].src.Stats().Emitted.Load() >= n
	})
	for _, p := range ps {
		p.stop(t)
		assert.Positive(t, p.src.Stats().Received.Load(), "each instance takes a share")
	}
	assert.Len(t, rec.seen(t), n)
}

func TestConfigValidate(t *testing.T) {
	for name, cfg := range map[string]mqtt.Config{
		"no broker":    {Topics: []string{"a"}, StateDir: "x"},
		"no topic":     {ConnConfig: mqtt.ConnConfig{Brokers: []string{"tcp://x:1"}}, StateDir: "x"},
		"no state dir": {ConnConfig: mqtt.ConnConfig{Brokers: []string{"tcp://x:1"}}, Topics: []string{"a"}},
		"bad filter":   {ConnConfig: mqtt.ConnConfig{Brokers: []string{"tcp://x:1"}}, Topics: []string{"a/#/b"}, StateDir: "x"},
		"bad qos":      {ConnConfig: mqtt.ConnConfig{Brokers: []string{"tcp://x:1"}}, Topics: []string{"a"}, StateDir: "x", QoS: 9},
		// A wire number is not taken for the QoS below it.
		"wire qos": {ConnConfig: mqtt.ConnConfig{Brokers: []string{"tcp://x:1"}}, Topics: []string{"a"}, StateDir: "x", QoS: 1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := mqtt.NewSource(cfg)
			assert.Error(t, err)
		})
	}
	_, err := mqtt.NewSource(mqtt.Config{ConnConfig: mqtt.ConnConfig{Brokers: []string{"tcp://x:1"}}, Topics: []string{"a"}, StateDir: "x"})
	assert.NoError(t, err)
}
