package mqtt_test

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/topology"
)

// logged returns a logger writing text to the returned buffer.
func logged() (*slog.Logger, *mosquittotest.LockedBuffer) {
	buf := &mosquittotest.LockedBuffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// runSource runs src in a topology until the test ends. The returned
// function waits up to 20s for the topology to stop by itself and returns
// its error.
func runSource(t *testing.T, src *mqtt.Source) (wait func() error) {
	t.Helper()
	topo, err := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true}})
	require.NoError(t, err)
	topo.AddSource("mqtt", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("out", (&recorder{}).factory(), topology.BoltConfig{}).Input("mqtt", topology.Global())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		err = topo.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		assert.NoError(t, src.Close())
	})
	return func() error {
		select {
		case <-done:
			return err
		case <-time.After(20 * time.Second):
			t.Fatal("the topology is still running")
			return nil
		}
	}
}

// retryIn extracts the waits of the logged failed attempts.
var retryIn = regexp.MustCompile(`msg="mqtt: connection attempt failed".* retry_in=(\S+)`)

// TestConnectRetried starts a source while nothing listens on the broker's
// port, then starts the broker: every failed attempt is logged with its
// reason, the waits double from ReconnectWait up to MaxReconnectInterval,
// and the first connection, once possible, is made.
func TestConnectRetried(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	broker.Stop()
	logger, log := logged()
	cfg := sourceConfig(broker.URL(), "retried", t.TempDir())
	cfg.Logger, cfg.ReconnectWait, cfg.MaxReconnectInterval = logger, 10*time.Millisecond, 40*time.Millisecond
	src, err := mqtt.NewSource(cfg)
	require.NoError(t, err)
	runSource(t, src)
	waitFor(t, 10*time.Second, "five failed attempts", func() bool { return len(retryIn.FindAllString(log.String(), -1)) >= 5 })
	var waits []string
	for _, m := range retryIn.FindAllStringSubmatch(log.String(), 5) {
		waits = append(waits, m[1])
	}
	assert.Equal(t, []string{"10ms", "20ms", "40ms", "40ms", "40ms"}, waits)
	assert.Contains(t, log.String(), "connection refused", "the reason is logged")
	assert.Contains(t, log.String(), "client_id=retried")
	assert.Zero(t, src.Stats().Connects.Load())

	broker.Start()
	waitFor(t, 10*time.Second, "the first connection", func() bool { return src.Stats().Connects.Load() == 1 })
}

// TestConnectUnknownHost retries a broker whose name does not resolve,
// logging the resolver's answer.
func TestConnectUnknownHost(t *testing.T) {
	logger, log := logged()
	cfg := sourceConfig("tcp://broker.invalid:1883", "unknown-host", t.TempDir())
	cfg.Logger, cfg.ReconnectWait, cfg.MaxReconnectInterval = logger, 10*time.Millisecond, 20*time.Millisecond
	src, err := mqtt.NewSource(cfg)
	require.NoError(t, err)
	runSource(t, src)
	waitFor(t, 10*time.Second, "two failed attempts", func() bool { return len(retryIn.FindAllString(log.String(), -1)) >= 2 })
	assert.Contains(t, log.String(), "broker.invalid")
}

// TestConnectRefused makes connections that retrying cannot fix: the
// source's Run returns a *ConnectError after one attempt, saying why.
// TLS against a plain port, or plain MQTT against a TLS port, is one.
func TestConnectRefused(t *testing.T) {
	users := mosquittotest.Start(t, mosquittotest.Config{Users: map[string]string{"alice": "secret"}})
	secure := mosquittotest.Start(t, mosquittotest.Config{TLS: true})
	for _, tc := range []struct {
		name   string
		broker *mosquittotest.Broker
		url    string // defaults to the broker's
		conf   func(*mqtt.Config)
		is     error
		reason string
	}{{
		name:   "wrong password",
		broker: users,
		conf:   func(c *mqtt.Config) { c.Username, c.Password = "alice", "wrong" },
		reason: "not Authorized",
		is:     packets.ErrorRefusedNotAuthorised,
	}, {
		name:   "no credentials",
		broker: users,
		conf:   func(*mqtt.Config) {},
		reason: "not Authorized",
		is:     packets.ErrorRefusedNotAuthorised,
	}, {
		name:   "untrusted broker certificate",
		broker: secure,
		conf:   func(c *mqtt.Config) { c.TLS.ServerName = "127.0.0.1" }, // the system's authorities only
		reason: "certificate signed by unknown authority",
	}, {
		name:   "certificate for another name",
		broker: secure,
		conf:   func(c *mqtt.Config) { c.TLS.CAFile, c.TLS.ServerName = secure.CAFile(), "broker.example" },
		reason: "not broker.example",
	}, {
		name:   "TLS to a plain port",
		broker: users,
		url:    "ssl://" + users.Addr(),
		conf:   func(c *mqtt.Config) { c.TLS.CAFile = secure.CAFile() },
		reason: "its port speaks plain MQTT; use tcp://" + users.Addr(),
		is:     mqtt.ErrTLSMismatch,
	}, {
		name:   "plain MQTT to a TLS port",
		broker: secure,
		url:    "tcp://" + secure.Addr(),
		conf:   func(*mqtt.Config) {},
		reason: "speaks TLS: use ssl://" + secure.Addr(),
		is:     mqtt.ErrTLSMismatch,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			logger, log := logged()
			url := tc.url
			if url == "" {
				url = tc.broker.URL()
			}
			cfg := sourceConfig(url, "refused", t.TempDir())
			cfg.Logger, cfg.ReconnectWait = logger, 10*time.Millisecond
			tc.conf(&cfg)
			src, err := mqtt.NewSource(cfg)
			require.NoError(t, err)
			err = runSource(t, src)()
			var ce *mqtt.ConnectError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "refused", ce.ClientID)
			assert.ErrorContains(t, err, tc.reason)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			} else {
				var verify *tls.CertificateVerificationError
				assert.ErrorAs(t, err, &verify)
			}
			assert.NotContains(t, log.String(), "connection attempt failed", "not retried")
			assert.Contains(t, log.String(), "not retrying")
		})
	}
}

// TestTLS connects to a TLS broker whose authority is given, and to one
// whose certificate is not checked, which it warns of once.
func TestTLS(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{TLS: true})
	const warning = `level=WARN msg="mqtt: TLS certificate verification is off`
	for _, tc := range []struct {
		name     string
		insecure bool
	}{{"authority given", false}, {"not verified", true}} {
		t.Run(tc.name, func(t *testing.T) {
			logger, log := logged()
			cfg := sourceConfig(broker.URL(), "tls", t.TempDir())
			cfg.Logger = logger
			if tc.insecure {
				cfg.TLS.InsecureSkipVerify = true
			} else {
				cfg.TLS.CAFile = broker.CAFile()
			}
			p := startPipeline(t, cfg, &recorder{}, 0, 1)
			waitFor(t, 10*time.Second, "first connection", func() bool { return p.src.Stats().Connects.Load() > 0 })
			want := 0
			if tc.insecure {
				want = 1
			}
			assert.Equal(t, want, strings.Count(log.String(), warning))
		})
	}
}

// TestBrokerURL rejects at validation the URLs paho could never connect
// with.
func TestBrokerURL(t *testing.T) {
	for url, ok := range map[string]bool{
		"tcp://localhost:1883":  true,
		"localhost:1883":        true,
		"ssl://host:8883":       true,
		"mqtts://host:8883":     true,
		"ws://host:80/mqtt":     true,
		"unix:///run/mqtt.sock": true,
		"http://localhost:1883": false,
		"https://host":          false,
		"tcp://":                false,
		"tcp://%zz":             false,
	} {
		t.Run(url, func(t *testing.T) {
			_, err := mqtt.NewSource(mqtt.Config{ConnConfig: mqtt.ConnConfig{Brokers: []string{url}}, Topics: []string{"a"}, StateDir: "x"})
			if ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, mqtt.ErrBrokerURL)
			}
		})
	}
}

// TestTakeover runs two sources with the same client id: the broker hands
// the session to whichever connected last, and each loses its connection
// soon after making it. Each logs that as an error naming the client id,
// and with MaxTakeovers one stops with ErrTakeover.
func TestTakeover(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	logger, log := logged()
	first := sourceConfig(broker.URL(), "twin", t.TempDir())
	first.Logger, first.ReconnectWait, first.MaxReconnectInterval = logger, 10*time.Millisecond, 50*time.Millisecond
	second := first
	second.StateDir = t.TempDir()
	second.MaxTakeovers = 5
	a, err := mqtt.NewSource(first)
	require.NoError(t, err)
	runSource(t, a)
	b, err := mqtt.NewSource(second)
	require.NoError(t, err)
	err = runSource(t, b)()
	assert.ErrorIs(t, err, mqtt.ErrTakeover)
	var ce *mqtt.ConnectError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "twin", ce.ClientID)
	assert.Regexp(t, `level=ERROR msg="mqtt: connection lost again soon after connecting: another client is probably using the same client id.*client_id=twin`, log.String())
	assert.True(t, strings.Count(log.String(), "level=ERROR") >= 1)
	assert.False(t, errors.Is(err, context.Canceled))
}

// OnConnect runs in its own goroutine, and closing the source (which the
// topology's Run does) waits for the calls under way: none outlives the
// client.
func TestCloseWaitsForOnConnect(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var returned atomic.Bool
	cfg := sourceConfig(broker.URL(), "onconnect", t.TempDir())
	cfg.OnConnect = func() {
		entered <- struct{}{}
		<-release
		returned.Store(true)
	}
	src, err := mqtt.NewSource(cfg)
	require.NoError(t, err)
	topo, err := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true}})
	require.NoError(t, err)
	topo.AddSource("mqtt", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("out", (&recorder{}).factory(), topology.BoltConfig{}).Input("mqtt", topology.Global())
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- topo.Run(ctx) }()
	<-entered
	cancel()
	close(release)
	require.NoError(t, <-ran)
	assert.True(t, returned.Load(), "the source was closed before OnConnect returned")
}
