package jetstreamedge

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/natstest"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// signalHandler signals each log record with the message msg.
type signalHandler struct {
	slog.Handler
	msg string
	got chan struct{}
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.got <- struct{}{}:
		default:
		}
	}
	return nil
}

// retryingTransport returns a Transport of pipeline on a server of its
// own that tries a failed publish again for an hour, and the handler of
// its log, which signals each record with the message retried.
func retryingTransport(t *testing.T, pipeline, retried string) (*Transport, signalHandler) {
	c := natstest.StartCluster(t, 1)
	nc, err := nats.Connect(c.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	h := signalHandler{msg: retried, got: make(chan struct{}, 1)}
	setup, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr, err := New(setup, nc, Config{Pipeline: pipeline, RetryFor: time.Hour, Logger: slog.New(h)})
	require.NoError(t, err)
	return tr, h
}

// An outlet trying a synchronous publish again holds no lock the
// confirmations of publishes need: nats.go reports them all on one
// goroutine. While one outlet's Drained batch cannot be stored, a failure
// reported for an earlier batch of it, and another outlet's
// confirmations, go through.
func TestStuckOutletDoesNotStallConfirmations(t *testing.T) {
	tr, retrying := retryingTransport(t, "stuck", "publish failed: trying again")

	// No stream takes the subject: no publish to it is confirmed.
	stuck := newOutlet(tr, "elsewhere")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sent := make(chan error, 1)
	go func() {
		sent <- stuck.Send(ctx, &edge.Batch{Drained: true}, func(error) { t.Error("an unsent batch reported done") })
	}()
	<-retrying.got

	// What nats.go's error handler does for an earlier batch of the stuck
	// outlet.
	lost := make(chan error, 1)
	p := &pending{o: stuck, ctx: ctx, msg: &nats.Msg{Subject: stuck.subject}, done: func(err error) { lost <- err }}
	tr.inflight <- struct{}{}
	tr.dones.Store(p.msg, p)
	tr.confirmed(p.msg, errors.New("timeout"))

	out, _, _ := tr.Edge("sink", 0)
	pt := particle.Particle{Time: 1, Origin: 1, Seq: 1, Measurement: "m", Fields: []particle.Field{{Key: "v", Value: particle.Int(1)}}}
	b := &edge.Batch{Items: []edge.Item{{Particle: pt, High: pt.Time}}, High: pt.Time}
	durable := make(chan error, 1)
	require.NoError(t, out.Send(context.Background(), b, func(err error) { durable <- err }))
	require.NoError(t, <-durable, "another outlet's batch is confirmed while one is stuck")

	cancel()
	require.ErrorIs(t, <-sent, context.Canceled)
	require.ErrorIs(t, <-lost, context.Canceled)
}

// Flush returns once every batch sent before it is confirmed, at once when
// none is open, and not while a publish is tried again.
func TestOutletFlushWaitsForConfirmations(t *testing.T) {
	tr, retrying := retryingTransport(t, "flush", "publish failed: trying again in place")
	ctx := context.Background()

	out, _, _ := tr.Edge("sink", 0)
	f := out.(edge.Flusher)
	ended, end := context.WithCancel(ctx)
	end()
	require.NoError(t, f.Flush(ended), "nothing sent")
	var durable atomic.Int64
	for i := range 50 {
		pt := particle.Particle{Time: int64(i), Origin: 1, Seq: uint64(i + 1), Measurement: "m", Fields: []particle.Field{{Key: "v", Value: particle.Int(int64(i))}}}
		b := &edge.Batch{Items: []edge.Item{{Particle: pt, High: pt.Time}}, High: pt.Time}
		require.NoError(t, out.Send(ctx, b, func(err error) {
			if err == nil {
				durable.Add(1)
			}
		}))
	}
	require.NoError(t, f.Flush(ctx))
	require.EqualValues(t, 50, durable.Load(), "every batch sent before Flush is durable when it returns")

	// No stream takes the subject: no publish to it is confirmed.
	stuck := newOutlet(tr, "elsewhere")
	sendCtx, giveUp := context.WithCancel(ctx)
	lost := make(chan error, 1)
	require.NoError(t, stuck.Send(sendCtx, &edge.Batch{}, func(err error) { lost <- err }))
	<-retrying.got
	// Flush with a context that ended returns nil only if it has nothing
	// to wait for.
	require.ErrorIs(t, stuck.Flush(ended), context.Canceled, "flushed while a publish is tried again")
	require.Empty(t, lost, "a publish tried again was given up")
	giveUp()
	require.ErrorIs(t, <-lost, context.Canceled)
}
