package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/connectors/postgres"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// TestTableLockDuringMQTTFeed locks the sink's table (ACCESS EXCLUSIVE,
// in a transaction: a migration, say) while a stock Mosquitto feeds a
// spool-mode MQTT source far more readings than its memory holds: the
// source goes on acknowledging, the backlog rises on disk, and once the
// lock is released it returns to zero with every reading a row and none
// dropped by the broker.
func TestTableLockDuringMQTTFeed(t *testing.T) {
	const first, n = 100, 10_000
	d := openDB(t)
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	src, err := mqtt.NewSource(mqtt.Config{
		ConnConfig:  mqtt.ConnConfig{Brokers: []string{broker.URL()}, ClientID: "pg-lock"},
		Topics:      []string{"sensors/#"},
		StateDir:    t.TempDir(),
		MaxBuffered: 100,
		Payload:     mqtt.PayloadConfig{TopicTags: "sensors/{sensor}"},
	})
	require.NoError(t, err)
	sink := newSink(t, postgres.Config{Table: d.table("readings"), BatchSize: 500})
	topo, err := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true}})
	require.NoError(t, err)
	topo.AddSource("mqtt", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("store", operation.Stateless(sink), topology.BoltConfig{Buffer: syncbuffer.Config{Window: 50 * time.Millisecond}}).
		Input("mqtt", topology.Global())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- topo.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, src.Close())
		if t.Failed() {
			t.Log(broker.Log())
		}
	}()
	st := src.Stats()
	waitUntilT(t, "connected", func() bool { return st.Connects.Load() > 0 })

	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("pg-lock-pub"))
	require.True(t, pub.Connect().WaitTimeout(10*time.Second))
	defer pub.Disconnect(100)
	base := time.Now().UnixNano()
	send := func(i, at int) paho.Token {
		return pub.Publish(fmt.Sprintf("sensors/s%d", at%4), 1, false, fmt.Sprintf("reading n=%di %d", i, base+int64(at)*int64(time.Millisecond)))
	}
	// The publisher stays within the broker's queue (1000) of what the
	// source acknowledged: it would wait for ever if the lock stopped
	// the acknowledgements.
	publish := func(from, to int) {
		var last paho.Token
		for i := from; i < to; i++ {
			for i-int(st.Acked.Load()) > 900 {
				time.Sleep(100 * time.Microsecond)
			}
			last = send(i, i)
		}
		require.True(t, last.WaitTimeout(20*time.Second))
		require.NoError(t, last.Error())
	}
	rows := func() int {
		var c int
		err := d.conn.QueryRow(context.Background(), "SELECT count(DISTINCT n) FROM "+d.table("readings")+" WHERE n >= 0").Scan(&c)
		if err != nil {
			return 0 // the sink has not made the table, or its columns, yet
		}
		return c
	}

	// The table exists once the first rows are in.
	publish(0, first)
	waitUntilT(t, "the first rows", func() bool { return rows() > 0 })
	lock, err := d.conn.Begin(context.Background())
	require.NoError(t, err)
	_, err = lock.Exec(context.Background(), "LOCK TABLE "+d.table("readings")+" IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	publish(first, first+n)
	waitUntilT(t, "every message acknowledged during the lock", func() bool { return st.Acked.Load() == first+n })
	bl, ok := src.BacklogStats()
	require.True(t, ok)
	t.Logf("during the lock: %d messages waiting, %d on disk, %d bytes", bl.Records, bl.OnDisk, bl.Bytes)
	assert.Greater(t, bl.OnDisk, int64(n/2), "the backlog rose, on disk")
	require.NoError(t, lock.Rollback(context.Background()))

	// A reading past the window releases the last ones.
	require.True(t, send(-1, first+n+1000).WaitTimeout(10*time.Second))
	waitUntilT(t, "every reading a row", func() bool { return rows() == first+n })
	waitUntilT(t, "the backlog back to zero", func() bool {
		bl, _ := src.BacklogStats()
		return bl.Records == 0
	})
	assert.Equal(t, first+n, d.count(t, "SELECT count(*) FROM "+d.table("readings")+" WHERE n >= 0"), "one row per reading")
	assert.NotContains(t, broker.Log(), "dropped", "the broker dropped messages")
}

// waitUntilT is waitUntil for the test's goroutine, with a longer wait.
func waitUntilT(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
