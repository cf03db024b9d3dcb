package mqtt_test

import (
	"context"
	"net"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
)

// TestProbe probes real brokers: one that accepts the client, a closed
// port, one that refuses its credentials, and a list whose first broker
// is away.
func TestProbe(t *testing.T) {
	open := mosquittotest.Start(t, mosquittotest.Config{})
	users := mosquittotest.Start(t, mosquittotest.Config{Users: map[string]string{"alice": "secret"}})
	closed := "tcp://" + closedAddr(t)
	tests := []struct {
		name    string
		cfg     mqtt.ConnConfig
		want    string // the broker that accepted, when no error
		is      error
		inError []string
	}{
		{name: "reachable", cfg: mqtt.ConnConfig{Brokers: []string{open.URL()}}, want: open.URL()},
		{name: "credentials accepted", cfg: mqtt.ConnConfig{Brokers: []string{users.URL()}, Username: "alice", Password: "secret"}, want: users.URL()},
		{name: "the second broker of two", cfg: mqtt.ConnConfig{Brokers: []string{closed, open.URL()}}, want: open.URL()},
		{name: "closed port", cfg: mqtt.ConnConfig{Brokers: []string{closed}, ClientID: "feed"},
			inError: []string{"mqtt: connecting to " + closed + ` as "feed-probe-`, "connection refused"}},
		{name: "wrong password", cfg: mqtt.ConnConfig{Brokers: []string{users.URL()}, Username: "alice", Password: "wrong"},
			is: packets.ErrorRefusedNotAuthorised, inError: []string{users.URL()}},
		{name: "TLS on a plain port", cfg: mqtt.ConnConfig{Brokers: []string{"ssl://" + open.Addr()}, ConnectTimeout: 5 * time.Second},
			is: mqtt.ErrTLSMismatch, inError: []string{"its port speaks plain MQTT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mqtt.Probe(context.Background(), tt.cfg)
			if tt.want != "" {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
				return
			}
			require.Error(t, err)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			for _, s := range tt.inError {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

// TestProbeLeavesTheSessionAlone probes a broker with the client id of a
// persistent session holding a queued message: the session's client
// still receives it when it comes back.
func TestProbeLeavesTheSessionAlone(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	const id, topic = "probed-session", "probe/queued"
	got := make(chan string, 1)
	sessionOpts := paho.NewClientOptions().AddBroker(broker.URL()).SetClientID(id).SetCleanSession(false).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) { got <- string(m.Payload()) })
	sub := paho.NewClient(sessionOpts)
	wait(t, sub.Connect())
	wait(t, sub.Subscribe(topic, 1, nil))
	sub.Disconnect(100)

	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("probe-publisher"))
	wait(t, pub.Connect())
	wait(t, pub.Publish(topic, 1, false, "queued while away"))
	pub.Disconnect(100)

	_, err := mqtt.Probe(context.Background(), mqtt.ConnConfig{Brokers: []string{broker.URL()}, ClientID: id})
	require.NoError(t, err)

	sub = paho.NewClient(sessionOpts)
	wait(t, sub.Connect())
	defer sub.Disconnect(100)
	select {
	case m := <-got:
		assert.Equal(t, "queued while away", m)
	case <-time.After(10 * time.Second):
		t.Fatal("the persistent session lost the message queued for it")
	}
}

// wait waits for tok and fails t on its error.
func wait(t *testing.T, tok paho.Token) {
	t.Helper()
	require.True(t, tok.WaitTimeout(10*time.Second))
	require.NoError(t, tok.Error())
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}
