package mqtt_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, debugState())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// debugState describes the pipelines of the test, for failures.
var debugState = func() string { return "" }

// publisher publishes numbered readings at QoS 1 from its own client.
type publisher struct {
	t      testing.TB
	client paho.Client
	base   int64
	next   int
}

func newPublisher(t testing.TB, url, id string) *publisher {
	t.Helper()
	o := paho.NewClientOptions().AddBroker(url).SetClientID(id).SetCleanSession(false).
		SetConnectRetry(true).SetMaxReconnectInterval(time.Second).SetStore(paho.NewOrderedMemoryStore())
	c := paho.NewClient(o)
	tok := c.Connect()
	require.True(t, tok.WaitTimeout(10*time.Second))
	require.NoError(t, tok.Error())
	t.Cleanup(func() { c.Disconnect(100) })
	return &publisher{t: t, client: c, base: time.Now().UnixNano()}
}

// topic and line give reading i: sensor i%8 in room i%4, timestamps 1ms
// apart, shuffled by up to 20ms.
func topic(i int) string { return fmt.Sprintf("sensors/room%d/s%d", i%4, i%8) }

func (p *publisher) line(i int) string {
	jitter := rand.Int64N(int64(20 * time.Millisecond))
	return fmt.Sprintf("reading n=%di,v=%d.5 %d", i, i, p.base+int64(i)*int64(time.Millisecond)-jitter)
}

// publish publishes readings next..next+n-1, staying at most ahead
// messages ahead of received() (what the subscriber acknowledged), so that a stock broker's queue (1000)
// never overflows; it waits for the last confirmation.
func (p *publisher) publish(n, ahead int, received func() int) {
	p.t.Helper()
	var last paho.Token
	for range n {
		i := p.next
		p.next++
		for received != nil && i-received() > ahead {
			time.Sleep(100 * time.Microsecond)
		}
		last = p.client.Publish(topic(i), 1, false, p.line(i))
	}
	if last != nil {
		require.True(p.t, last.WaitTimeout(30*time.Second), "publish not confirmed")
		require.NoError(p.t, last.Error())
	}
}

// flushWindow publishes a reading far ahead in event time, not counted
// by the recorder (its n is -1): it releases the last readings, which
// would otherwise wait in the synchronization buffer for newer data.
func (p *publisher) flushWindow() {
	p.t.Helper()
	tok := p.client.Publish(topic(0), 1, false, fmt.Sprintf("reading n=-1i %d", p.base+int64(p.next+10_000)*int64(time.Millisecond)))
	require.True(p.t, tok.WaitTimeout(10*time.Second))
}

// recorder is a bolt that keeps what each instance processed.
type recorder struct {
	mu    sync.Mutex
	out   [][]particle.Particle
	count atomic.Int64
	delay time.Duration
	// gate, when not nil, stalls every instance until it is closed: a
	// destination that does not answer.
	gate chan struct{}
}

func (r *recorder) factory() operation.Factory {
	return func() operation.Operation {
		r.mu.Lock()
		i := len(r.out)
		r.out = append(r.out, nil)
		r.mu.Unlock()
		return operation.Func(func(_ context.Context, in particle.Particle, _ operation.Emitter) error {
			if r.delay > 0 {
				time.Sleep(r.delay)
			}
			if r.gate != nil {
				<-r.gate
			}
			r.mu.Lock()
			r.out[i] = append(r.out[i], in)
			r.mu.Unlock()
			r.count.Add(1)
			return nil
		})
	}
}

// seen counts the output by reading number n and checks event-time order
// per instance.
func (r *recorder) seen(t testing.TB) map[int64]int {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[int64]int{}
	for inst, ps := range r.out {
		for j, p := range ps {
			if j > 0 && p.Time < ps[j-1].Time {
				t.Errorf("instance %d: particle %d at %d after %d: not in event-time order", inst, j, p.Time, ps[j-1].Time)
			}
			v, ok := p.Field("n")
			require.True(t, ok)
			if v.IntValue() >= 0 {
				seen[v.IntValue()]++
			}
		}
	}
	return seen
}

// pipeline is a running topology: an MQTT source and a recorder.
type pipeline struct {
	src    *mqtt.Source
	rec    *recorder
	topo   *topology.Topology
	cancel context.CancelFunc
	done   chan error
	dead   *connectortest.DeadLetters
}

func startPipeline(t testing.TB, cfg mqtt.Config, rec *recorder, window time.Duration, parallelism int) *pipeline {
	t.Helper()
	src, err := mqtt.NewSource(cfg)
	require.NoError(t, err)
	dead := &connectortest.DeadLetters{}
	topo, err := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true}, DeadLetters: dead})
	require.NoError(t, err)
	topo.AddSource("mqtt", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("out", rec.factory(), topology.BoltConfig{Parallelism: parallelism, Buffer: syncbuffer.Config{Window: window}}).
		Input("mqtt", topology.Fields("sensor"))
	ctx, cancel := context.WithCancel(context.Background())
	p := &pipeline{src: src, rec: rec, topo: topo, cancel: cancel, done: make(chan error, 1), dead: dead}
	go func() { p.done <- topo.Run(ctx) }()
	debugState = func() string {
		st := src.Stats()
		return fmt.Sprintf("received=%d spooled=%d acked=%d emitted=%d completed=%d buffered=%d recorded=%d late=%d acker=%+v",
			st.Received.Load(), st.Spooled.Load(), st.Acked.Load(), st.Emitted.Load(), st.Completed.Load(), st.Buffered.Load(),
			rec.count.Load(), topo.Stats("out").Late.Load(), topo.AckStats())
	}
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop cancels the topology, waits for it to drain and closes the source.
func (p *pipeline) stop(t testing.TB) {
	t.Helper()
	if p.cancel == nil {
		return
	}
	p.cancel()
	p.cancel = nil
	select {
	case err := <-p.done:
		require.NoError(t, err)
	case <-time.After(40 * time.Second):
		t.Fatal("topology did not stop")
	}
	require.NoError(t, p.src.Close())
}

func sourceConfig(url, id, stateDir string) mqtt.Config {
	return mqtt.Config{
		ConnConfig: mqtt.ConnConfig{Brokers: []string{url}, ClientID: id, MaxReconnectInterval: time.Second},
		Topics:     []string{"sensors/#"},
		StateDir:   stateDir,
		Payload:    mqtt.PayloadConfig{TopicTags: "sensors/{room}/{sensor}"},
	}
}
