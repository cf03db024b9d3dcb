package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The example against its own Mosquitto: readings published on
// sensors/s1 and sensors/s2 come back as ten-second means on
// results/<sensor>, and are printed.
func TestMeansPublishedPerSensor(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	connect := func(id string) paho.Client {
		c := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID(id).SetCleanSession(false))
		require.True(t, c.Connect().WaitTimeout(10*time.Second))
		return c
	}
	// The example's persistent session, made beforehand, keeps the
	// readings until the example connects.
	session := connect("sensorstorm-example-mqtt")
	require.True(t, session.Subscribe("sensors/#", 1, nil).WaitTimeout(10*time.Second))
	session.Disconnect(0)
	results := make(chan paho.Message, 64)
	client := connect("test")
	defer client.Disconnect(100)
	require.True(t, client.Subscribe("results/#", 1, func(_ paho.Client, m paho.Message) { results <- m }).WaitTimeout(10*time.Second))

	// s1 reads i, s2 reads 2i, at i seconds for 20 s and at 25 s; the
	// last reading, s1 at 35 s, closes the window of 25 s: once its
	// results are out, every reading was processed.
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	publish := func(i, s int) paho.Token {
		return client.Publish(fmt.Sprintf("sensors/s%d", s), 1, false, fmt.Sprintf("room temperature=%d %d", s*i, base+int64(i)*1e9))
	}
	for i := range 21 {
		if i == 20 {
			i = 25
		}
		publish(i, 1)
		publish(i, 2)
	}
	require.True(t, publish(35, 1).WaitTimeout(10*time.Second))

	var stdout, stderr strings.Builder // read once run has returned
	ctx, cancel := context.WithCancel(context.Background())
	args := []string{"--broker", broker.URL(), "--state-dir", t.TempDir()}
	code := make(chan int, 1)
	go func() { code <- run(ctx, args, &stdout, &stderr) }()
	got := map[string][]string{}
	take := func(n int) {
		for range n {
			select {
			case m := <-results:
				got[m.Topic()] = append(got[m.Topic()], string(m.Payload()))
			case <-time.After(30 * time.Second):
				t.Fatalf("results after 30s: %v", got)
			}
		}
	}
	take(6)
	cancel()
	require.Equal(t, 0, <-code, stderr.String())
	take(1) // stopping closed the last window, [30s, 40s) of s1

	// The means of the windows, published in ns and printed in ms, in
	// event-time order.
	published := map[string][]string{}
	var printed strings.Builder
	for _, r := range []struct {
		sensor, mean string
		end          int64
	}{{"s1", "4.5", 10}, {"s2", "9", 10}, {"s2", "29", 20}, {"s1", "14.5", 20}, {"s1", "25", 30}, {"s2", "50", 30}, {"s1", "35", 40}} {
		line, end := "room,sensor="+r.sensor+" temperature_mean="+r.mean, base+r.end*1e9
		published["results/"+r.sensor] = append(published["results/"+r.sensor], fmt.Sprintf("%s %d", line, end))
		fmt.Fprintf(&printed, "%s %d\n", line, end/1e6)
	}
	assert.Equal(t, published, got)
	assert.Equal(t, printed.String(), stdout.String())
	assert.Contains(t, stderr.String(), "msg=stopped received=43 published=7")
}
