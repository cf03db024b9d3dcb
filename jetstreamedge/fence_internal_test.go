package jetstreamedge

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// A fenced transport publishes nothing: Send refuses at once, and a Send
// waiting for room in flight (confirmations a partition withholds) stops
// waiting when the fence rises, so that the instance blocked in it can
// start afresh. Unfenced, the transport owns its units again.
func TestFencedTransportPublishesNothing(t *testing.T) {
	tr := &Transport{cfg: Config{Logger: slog.New(slog.DiscardHandler), AckWait: time.Hour}, inflight: make(chan struct{}, 1), reassigned: make(chan struct{})}
	tr.encoders.New = func() any { return new(encoder) }
	o := newOutlet(tr, "s")
	b := &edge.Batch{}
	done := func(error) { t.Error("done called for a batch not sent") }

	tr.inflight <- struct{}{} // full: Send waits
	waited := make(chan error, 1)
	go func() { waited <- o.Send(context.Background(), b, done) }()
	reassigned := tr.reassignment()
	tr.Fence()
	require.ErrorIs(t, <-waited, ErrFenced, "the waiting Send")
	require.ErrorIs(t, o.Send(context.Background(), b, done), ErrFenced, "a Send while fenced")
	require.Equal(t, 1, len(tr.inflight), "no room taken")
	<-reassigned // the inlets hand their units over
	require.False(t, tr.owns("c", true))
	fenced, lifted := tr.Fenced()
	require.True(t, fenced)

	// An instance the fence stopped has not started afresh: the fence
	// stays up until its inlet's Run is called again.
	in := &inlet{t: tr}
	tr.inlets = append(tr.inlets, in)
	in.fenced.Store(true)
	tr.restarting.Add(1)
	require.False(t, tr.Unfence())
	fenced, _ = tr.Fenced()
	require.True(t, fenced)
	if in.fenced.Swap(false) { // as Run does first
		tr.restarting.Add(-1)
	}

	require.True(t, tr.Unfence())
	<-lifted
	require.True(t, tr.owns("c", false))
	fenced, _ = tr.Fenced()
	require.False(t, fenced)
}
