package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/spool"
)

// TestIngestDamagedSpool checks that ingest refuses to start on a spool
// damaged well before its end, naming the damage and the way out, and
// with --spool-repair goes on with every message but the damaged one.
func TestIngestDamagedSpool(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	dir := t.TempDir()
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "out.lp")

	// Ten acknowledged messages a killed run left in its spool, in the MQTT
	// source's record format: topic length, topic, receipt time, payload.
	s, err := spool.Open(state, spool.Config{})
	require.NoError(t, err)
	base := time.Now().UnixNano()
	for i := range 10 {
		topic := "sensors/s1"
		rec := binary.AppendUvarint(nil, uint64(len(topic)))
		rec = append(rec, topic...)
		rec = binary.LittleEndian.AppendUint64(rec, uint64(base))
		rec = fmt.Appendf(rec, "reading n=%di %d", i, base+int64(i))
		_, err := s.Append(rec)
		require.NoError(t, err)
		require.NoError(t, s.Sync())
	}
	require.NoError(t, s.Close())
	segs, err := filepath.Glob(filepath.Join(state, "*.wal"))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	b, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	at := bytes.Index(b, []byte("n=3i"))
	require.Positive(t, at)
	b[at+2] ^= 0x10
	require.NoError(t, os.WriteFile(segs[0], b, 0o644))

	args := []string{"ingest", "--broker", broker.URL(), "--topic", "sensors/#", "--client-id", "damaged",
		"--state-dir", state, "--out", out, "--append", "--window", "10ms"}
	var stdout bytes.Buffer
	stderr := &mosquittotest.LockedBuffer{}
	assert.Equal(t, exitError, run(t.Context(), args, &stdout, stderr))
	assert.Contains(t, stderr.String(), "1 records lost")
	assert.Contains(t, stderr.String(), "--spool-repair")
	assert.Empty(t, readOutput(t, out))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr = &mosquittotest.LockedBuffer{}
	code := make(chan int, 1)
	go func() { code <- run(ctx, append(args, "--spool-repair"), &stdout, stderr) }()
	waitUntil(t, 20*time.Second, "ingest connected", func() bool { return strings.Contains(stderr.String(), "mqtt: connected") })
	// A reading past the window releases the replayed ones.
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("damaged-pub"))
	require.True(t, pub.Connect().WaitTimeout(10*time.Second))
	defer pub.Disconnect(100)
	tok := pub.Publish("sensors/s1", 1, false, fmt.Sprintf("reading n=-1i %d", base+int64(time.Second)))
	require.True(t, tok.WaitTimeout(10*time.Second))
	require.NoError(t, tok.Error())
	waitUntil(t, 20*time.Second, "the nine intact messages written", func() bool { return len(readOutput(t, out)) == 9 })
	cancel()
	assert.Equal(t, exitOK, <-code, stderr.String())
	seen := readOutput(t, out)
	assert.Zero(t, seen[3], "the damaged message")
	assert.Contains(t, stderr.String(), "lost=1")
}
