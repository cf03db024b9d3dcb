package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/pipeline"
)

// The shipped MQTT pipeline, run end to end against a private Mosquitto:
// line protocol published on sensors/<sensor> comes out as ten-second
// means on results/<sensor> and on standard output, equal to a plain
// computation.
func TestMQTTPipelineEndToEnd(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	shipped, err := os.ReadFile("../pipelines/mqtt-mean.yaml")
	require.NoError(t, err)
	file := strings.ReplaceAll(string(shipped), "tcp://127.0.0.1:1883", broker.URL())
	file = strings.Replace(file, "state_dir: sensorstorm-state/mqtt-mean", "state_dir: "+t.TempDir(), 1)
	p, err := pipeline.Parse([]byte(file), "mqtt-mean.yaml")
	require.NoError(t, err)
	var stdout bytes.Buffer // read once Run has returned
	built, err := p.Build(pipeline.Options{Stdout: &stdout})
	require.NoError(t, err)

	connect := func(id string, clean bool) paho.Client {
		c := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID(id).SetCleanSession(clean))
		require.True(t, c.Connect().WaitTimeout(10*time.Second))
		return c
	}
	// The source's persistent session, made beforehand, keeps what is
	// published until the source connects.
	session := connect(p.Sources[0].MQTT.ClientID, false)
	require.True(t, session.Subscribe("sensors/#", 1, nil).WaitTimeout(10*time.Second))
	session.Disconnect(0)
	results := make(chan paho.Message, 64)
	client := connect("test", true)
	defer client.Disconnect(100)
	require.True(t, client.Subscribe("results/#", 1, func(_ paho.Client, m paho.Message) { results <- m }).WaitTimeout(10*time.Second))

	// Two sensors, one reading a second for 30 s and one at 45 s; the
	// last reading, s1 at 55 s, closes the window of 45 s: once its
	// results are out, every reading was processed.
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	values := map[string]func(i int) float64{"s1": func(i int) float64 { return 1.5 * float64(i) }, "s2": func(i int) float64 { return 100 - float64(i*i)/7 }}
	want := map[string]map[int64][]float64{"s1": {}, "s2": {}} // sensor, window end: values
	var tok paho.Token
	publish := func(i int, sensor string) {
		v := values[sensor](i)
		tok = client.Publish("sensors/"+sensor, 1, false, fmt.Sprintf("room temperature=%v %d", v, base+int64(i)*1e9))
		end := base + int64(i/10+1)*10e9
		want[sensor][end] = append(want[sensor][end], v)
	}
	for i := range 31 {
		if i == 30 {
			i = 45
		}
		publish(i, "s1")
		publish(i, "s2")
	}
	publish(55, "s1")
	require.True(t, tok.WaitTimeout(10*time.Second))

	_, ok := built.BacklogStats("sensors")
	assert.False(t, ok, "no backlog before the spool is open")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- built.Run(ctx) }()
	published := map[string][]string{}
	take := func(n int) {
		for range n {
			select {
			case m := <-results:
				published[m.Topic()] = append(published[m.Topic()], string(m.Payload()))
			case <-time.After(30 * time.Second):
				t.Fatalf("%d results after 30s: %v", len(published["results/s1"])+len(published["results/s2"]), published)
			}
		}
	}
	take(8) // four windows of each sensor, closed by the watermark
	cancel()
	require.NoError(t, <-done)
	take(1) // the last one, [50s, 60s) of s1, closed by the end of the stream

	check := func(where string, text string, prec particle.Precision, windows int) {
		t.Helper()
		dec, err := particle.NewDecoderBytes([]byte(text), where, particle.DecoderConfig{Precision: prec})
		require.NoError(t, err)
		n := 0
		for r := (particle.Particle{}); dec.Decode(&r) == nil; n++ {
			sensor, _ := r.Tag("sensor")
			vs := want[sensor][r.Time]
			require.NotEmpty(t, vs, "%s: no window of %s ends at %d", where, sensor, r.Time)
			sum := 0.0
			for _, v := range vs {
				sum += v
			}
			mean, ok := r.Field("temperature_mean")
			require.True(t, ok, "%s: %v", where, r)
			x, _ := mean.Number()
			assert.InDelta(t, sum/float64(len(vs)), x, 1e-9, "%s: %s window ending %d", where, sensor, r.Time)
		}
		assert.Equal(t, windows, n, "%s: %s", where, text)
	}
	check("results/s1", strings.Join(published["results/s1"], "\n"), particle.Nanosecond, 5)
	check("results/s2", strings.Join(published["results/s2"], "\n"), particle.Nanosecond, 4)
	check("stdout", stdout.String(), particle.Millisecond, 9)
	for _, c := range built.Components() {
		assert.Zero(t, built.Stats(c).Late.Load(), "late at %s", c)
		assert.Zero(t, built.Stats(c).Errors.Load(), "errors at %s", c)
	}
	assert.Equal(t, uint64(63), built.Stats("sensors").Acked.Load(), "every reading's tree completed")
	bl, ok := built.BacklogStats("sensors")
	require.True(t, ok)
	assert.Zero(t, bl.Records, "nothing waits at the end: %+v", bl)
	assert.Zero(t, bl.Oldest)
	_, ok = built.BacklogStats("mean")
	assert.False(t, ok, "a bolt has no backlog")
}
