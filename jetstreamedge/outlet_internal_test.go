package jetstreamedge

import (
	"context"
	"errors"
	"log/slog"
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

// An outlet trying a synchronous publish again holds no lock the
// confirmations of publishes need: nats.go reports them all on one
// goroutine. While one outlet's Drained batch cannot be stored, a failure
// reported for an earlier batch of it, and another outlet's
// confirmations, go through.
func TestStuckOutletDoesNotStallConfirmations(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	nc, err := nats.Connect(c.URL())
	require.NoError(t, err)
	defer nc.Close()
	retrying := signalHandler{msg: "publish failed: trying again", got: make(chan struct{}, 1)}
	setup, cancelSetup := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelSetup()
	tr, err := New(setup, nc, Config{Pipeline: "stuck", RetryFor: time.Hour, Logger: slog.New(retrying)})
	require.NoError(t, err)

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
