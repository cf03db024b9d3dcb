package jetstreamstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/checkpoint"
	"github.com/sensorstorm/sensorstorm/checkpoint/checkpointtest"
	"github.com/sensorstorm/sensorstorm/checkpoint/jetstreamstore"
	"github.com/sensorstorm/sensorstorm/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func connect(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

func TestStoreKeepsTheStoreContract(t *testing.T) {
	js := connect(t, natstest.StartCluster(t, 1).URL())
	n := 0
	checkpointtest.TestStore(t, func(t *testing.T) checkpoint.Store {
		n++
		bucket := fmt.Sprint("ckpt-", n)
		s, err := jetstreamstore.New(context.Background(), js, jetstreamstore.Config{Bucket: bucket})
		require.NoError(t, err)
		for _, stream := range []string{"OBJ_" + bucket, "KV_" + bucket + "-manifests"} {
			st, err := js.Stream(context.Background(), stream)
			require.NoError(t, err)
			require.False(t, st.CachedInfo().Config.AllowDirect, "%s is read through its leader", stream)
		}
		return s
	})
}

// A checkpoint stored with three replicas is read back whole, through
// another connection, once the server the writer was connected to is
// gone.
func TestStoreOutlivesAServer(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	ctx := context.Background()
	cfg := jetstreamstore.Config{Bucket: "pipeline-window", Replicas: 3}
	s, err := jetstreamstore.New(ctx, connect(t, c.URL()), cfg)
	require.NoError(t, err)
	big := make([]byte, 5<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	require.NoError(t, s.Put(ctx, 1, "window/0", big))
	require.NoError(t, s.Commit(ctx, checkpoint.Manifest{ID: 1, Instances: []string{"window/0"}, Data: []byte("positions")}))

	c.Stop(0)
	c.WaitReady()
	// The buckets' streams elect new leaders when theirs was the server
	// stopped: until then a request times out, and is made again.
	js := connect(t, c.URL())
	var (
		m       checkpoint.Manifest
		b       []byte
		lastErr error
	)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var again *jetstreamstore.Store
		again, lastErr = jetstreamstore.New(ctx, js, cfg)
		if lastErr == nil {
			m, lastErr = checkpoint.Latest(ctx, again)
		}
		if lastErr == nil {
			b, lastErr = again.Get(ctx, 1, "window/0")
		}
		if lastErr == nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // waiting for an election, not timing
	}
	require.NoError(t, lastErr)
	require.Equal(t, checkpoint.Manifest{ID: 1, Instances: []string{"window/0"}, Data: []byte("positions")}, m)
	require.Equal(t, big, b)
}

// A manifest that is not one is refused, naming its key.
func TestStoreRefusesADamagedManifest(t *testing.T) {
	js := connect(t, natstest.StartCluster(t, 1).URL())
	ctx := context.Background()
	s, err := jetstreamstore.New(ctx, js, jetstreamstore.Config{Bucket: "damaged"})
	require.NoError(t, err)
	kv, err := js.KeyValue(ctx, "damaged-manifests")
	require.NoError(t, err)
	_, err = kv.Put(ctx, "00000000000000000007", []byte{9, 9, 9})
	require.NoError(t, err)

	_, err = checkpoint.Latest(ctx, s)
	var corrupt *checkpoint.CorruptError
	require.True(t, errors.As(err, &corrupt), "%v", err)
	require.Equal(t, "damaged-manifests/00000000000000000007", corrupt.File)
	require.ErrorIs(t, err, checkpoint.ErrFormat)
}

// A process that lost a unit and still writes its partition (a write it
// held while cut off lands late) changes none of the checkpoints the
// unit's next holder completed: not the manifest, not the snapshots it
// lists.
func TestLateWriterChangesNoCheckpoint(t *testing.T) {
	js := connect(t, natstest.StartCluster(t, 1).URL())
	ctx := context.Background()
	open := func() checkpoint.Store {
		s, err := jetstreamstore.New(ctx, js, jetstreamstore.Config{Bucket: "late"})
		require.NoError(t, err)
		p, err := s.Partition("bolt/window/0")
		require.NoError(t, err)
		return p
	}
	holder, late := open(), open()
	require.NoError(t, holder.Put(ctx, 4, "bolt/window/0", []byte("holder's")))
	require.NoError(t, holder.Commit(ctx, checkpoint.Manifest{ID: 4, Instances: []string{"bolt/window/0"}, Data: []byte("holder")}))

	require.NoError(t, late.Put(ctx, 4, "bolt/window/0", []byte("late")))
	require.ErrorIs(t, late.Commit(ctx, checkpoint.Manifest{ID: 4, Instances: []string{"bolt/window/0"}, Data: []byte("late")}), checkpoint.ErrCommitted)

	for _, s := range []checkpoint.Store{holder, late} {
		m, err := s.Manifest(ctx, 4)
		require.NoError(t, err)
		require.Equal(t, "holder", string(m.Data))
		snap, err := s.Get(ctx, 4, "bolt/window/0")
		require.NoError(t, err)
		require.Equal(t, "holder's", string(snap))
	}
}

// Workers that start together open one store: whichever creates the
// buckets, and turns their direct gets off, the others open them as they
// are.
func TestStoreOpenedByWorkersAtOnce(t *testing.T) {
	js := connect(t, natstest.StartCluster(t, 1).URL())
	for i := range 5 {
		bucket := fmt.Sprint("together-", i)
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				_, err := jetstreamstore.New(context.Background(), js, jetstreamstore.Config{Bucket: bucket})
				errs <- err
			}()
		}
		for range 3 {
			require.NoError(t, <-errs)
		}
	}
}
