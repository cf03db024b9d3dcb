package natstest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A replicated stream keeps its messages across the restart of a node.
func TestClusterReplicatesAcrossARestart(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	nc, err := nats.Connect(c.URL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "t.a", []byte("one"))
	require.NoError(t, err)
	c.Stop(1)
	// If the node stopped led the stream, the others elect a leader
	// first: until then a publish finds no one to answer it.
	for {
		_, err = js.Publish(ctx, "t.a", []byte("two"), jetstream.WithMsgID("two"))
		if !errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, nats.ErrNoResponders) || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, err)
	c.Start(1)
	c.WaitReady()
	s, err := js.Stream(ctx, "T")
	require.NoError(t, err)
	require.Equal(t, uint64(2), s.CachedInfo().State.Msgs)
}
