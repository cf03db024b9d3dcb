package jetstreamedge_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/jetstreamedge"
	"github.com/sensorstorm/sensorstorm/natstest"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// worker is one process's view of the cluster: its own connection and
// transport.
type worker struct {
	nc *nats.Conn
	t  *jetstreamedge.Transport
}

func newWorker(t *testing.T, c *natstest.Cluster, cfg jetstreamedge.Config) *worker {
	t.Helper()
	nc, err := nats.Connect(c.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr, err := jetstreamedge.New(ctx, nc, cfg)
	require.NoError(t, err)
	return &worker{nc: nc, t: tr}
}

// twoWorkers starts a cluster of three nodes and two workers on it.
func twoWorkers(t *testing.T, cfg jetstreamedge.Config) (first, second *worker) {
	t.Helper()
	c := natstest.StartCluster(t, 3)
	return newWorker(t, c, cfg), newWorker(t, c, cfg)
}

// delivery is a batch a feed received, and its done callback.
type delivery struct {
	b    edge.Batch
	done func(error)
}

// releases is what a test feed tells of its instance's releases: it
// released every particle it finished, in order.
type releases struct {
	mu     sync.Mutex
	newest syncbuffer.Key
	ok     bool
}

// finished notes that the particles of items were released.
func (r *releases) finished(items []edge.Item) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range items {
		k := syncbuffer.Key{Time: it.Particle.Time, Origin: it.Particle.Origin, Seq: it.Particle.Seq}
		if !r.ok || r.newest.Less(k) {
			r.newest, r.ok = k, true
		}
	}
}

func (r *releases) Checkpoint() {}

func (r *releases) Released() (syncbuffer.Key, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.newest, r.ok
}

// heldFeed hands every delivery to the test, which completes it.
type heldFeed struct {
	releases
	got chan delivery
}

func (f *heldFeed) Deliver(ctx context.Context, b *edge.Batch, done func(error)) error {
	c := *b
	c.Items = slices.Clone(b.Items)
	finish := func(err error) {
		if err == nil {
			f.finished(c.Items)
		}
		done(err)
	}
	select {
	case f.got <- delivery{b: c, done: finish}:
		return nil
	case <-ctx.Done():
		finish(ctx.Err())
		return ctx.Err()
	}
}

// unitRun is an inlet of a unit that runs, as package topology runs one.
type unitRun struct {
	edge.Resumer
	stop func()
}

// runInlet runs the inlet of bolt/index on w until stop, as the inlet of
// a unit that restored the checkpoint at pos (nil: none). A feed that
// commits (orderFeed) commits its checkpoints to the inlet.
func runInlet(t *testing.T, w *worker, bolt string, index int, pos []byte, feed edge.Feed) *unitRun {
	_, in, _ := w.t.Edge(bolt, index)
	res := in.(edge.Resumer)
	require.NoError(t, res.Resume(pos))
	if f, ok := feed.(*orderFeed); ok {
		f.unit = res
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = in.Run(ctx, feed) })
	return &unitRun{Resumer: res, stop: func() {
		cancel()
		wg.Wait()
	}}
}

// commit commits a checkpoint of u after the batch it delivered as
// delivered, and returns its position.
func (u *unitRun) commit(t *testing.T, delivered uint64) []byte {
	t.Helper()
	pos, err := u.Position(delivered)
	require.NoError(t, err)
	u.Committed(pos)
	return pos
}

// send publishes b to bolt/index from w and waits until it is durable.
func send(t *testing.T, w *worker, bolt string, index int, b edge.Batch) {
	t.Helper()
	out, _, _ := w.t.Edge(bolt, index)
	durable := make(chan error, 1)
	require.NoError(t, out.Send(context.Background(), &b, func(err error) { durable <- err }))
	require.NoError(t, <-durable)
}

func data(origin uint32, seqs ...uint64) edge.Batch {
	b := edge.Batch{High: int64(seqs[len(seqs)-1]), Promise: 0}
	for _, s := range seqs {
		p := particle.Particle{Time: int64(s), Origin: origin, Seq: s, Measurement: "m",
			Fields: []particle.Field{{Key: "v", Value: particle.Int(int64(s))}}}
		b.Items = append(b.Items, edge.Item{Particle: p, High: p.Time})
	}
	return b
}

// streamOf returns the stream of pipeline, as w's connection sees it.
func streamOf(t *testing.T, w *worker, pipeline string) jetstream.Stream {
	t.Helper()
	js, err := jetstream.New(w.nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, jetstreamedge.StreamName(pipeline))
	require.NoError(t, err)
	return stream
}

// ackPending returns the consumer's unacknowledged messages.
func ackPending(t *testing.T, w *worker, pipeline, bolt string, index int) int {
	t.Helper()
	js, err := jetstream.New(w.nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, jetstreamedge.StreamName(pipeline), jetstreamedge.ConsumerName(bolt, index))
	require.NoError(t, err)
	info, err := c.Info(ctx)
	require.NoError(t, err)
	return info.NumAckPending
}

func receive(t *testing.T, f *heldFeed) delivery {
	t.Helper()
	select {
	case d := <-f.got:
		return d
	case <-time.After(20 * time.Second):
		t.Fatal("nothing delivered within 20s")
		return delivery{}
	}
}

// A message is acknowledged only once the engine reports every particle
// in it done and a checkpoint after it committed, and copies of particles
// already received are dropped.
func TestAckOnlyAfterLocalCompletionAndDedup(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	cfg := jetstreamedge.Config{Pipeline: "acks", Replicas: 3}
	w := newWorker(t, c, cfg)
	feed := &heldFeed{got: make(chan delivery)}
	u := runInlet(t, w, "sink", 0, nil, feed)
	defer u.stop()

	send(t, w, "sink", 0, data(7, 1, 2))
	d := receive(t, feed)
	require.Len(t, d.b.Items, 2)
	require.Equal(t, 1, ackPending(t, w, "acks", "sink", 0), "unacknowledged while the particles are in progress")
	d.done(nil)
	require.Equal(t, 1, ackPending(t, w, "acks", "sink", 0), "unacknowledged until a checkpoint after it committed")
	u.commit(t, d.b.Position)
	require.Eventually(t, func() bool { return ackPending(t, w, "acks", "sink", 0) == 0 }, 10*time.Second, 20*time.Millisecond)

	send(t, w, "sink", 0, data(7, 2, 3))
	d = receive(t, feed)
	require.Len(t, d.b.Items, 1, "the copy of (7, 2) is dropped")
	require.Equal(t, uint64(3), d.b.Items[0].Particle.Seq)
	require.Equal(t, uint64(1), w.t.Stats().Duplicates.Load())
	d.done(nil)
}

// Every copy of an upstream instance that ends sends an end of stream,
// and every copy of a unit, one on each worker, needs one from each input
// to end. The copy owning the unit takes one and gives the second back;
// once the unit ended there, the copy on the other worker takes it and
// ends too. Had the owner taken both, acknowledged together when it
// ended, the other worker would never end (a cluster run whose worker
// did not finish).
func TestEveryCopyOfAnEndedUnitReceivesAnEnd(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	cfg := jetstreamedge.Config{Pipeline: "ends", Replicas: 3, AckWait: time.Second, PinnedTTL: time.Second}
	owner := newWorker(t, c, cfg)
	var ended atomic.Bool
	cfg.Owns = func(string, bool) bool { return ended.Load() }
	other := newWorker(t, c, cfg)
	send(t, owner, "room", 0, edge.Batch{EOS: true})
	send(t, other, "room", 0, edge.Batch{EOS: true})

	feed := &heldFeed{got: make(chan delivery)}
	_, in, _ := owner.t.Edge("room", 0)
	u := &unitRun{Resumer: in.(edge.Resumer)}
	require.NoError(t, u.Resume(nil))
	ctx, stop := context.WithCancelCause(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = in.Run(ctx, feed) })
	d := receive(t, feed)
	require.True(t, d.b.EOS)
	require.Eventually(t, func() bool { return owner.t.Stats().SpareEnds.Load() > 0 }, 20*time.Second, 20*time.Millisecond,
		"the second end of stream is given back")
	// The instance ended, and took its last checkpoint.
	d.done(nil)
	u.commit(t, d.b.Position)
	stop(edge.ErrEnded)
	wg.Wait()

	ended.Store(true)
	feed2 := &heldFeed{got: make(chan delivery)}
	u2 := runInlet(t, other, "room", 0, nil, feed2)
	defer u2.stop()
	d = receive(t, feed2)
	require.True(t, d.b.EOS, "the copy on the other worker ends too")
	d.done(nil)
	u2.commit(t, d.b.Position)
	require.Eventually(t, func() bool { return ackPending(t, other, "ends", "room", 0) == 0 }, 10*time.Second, 20*time.Millisecond)
}

// A message a worker took and never finished is delivered to another
// worker once the first stopped pulling: its units move.
func TestRedeliveryAfterAWorkerDies(t *testing.T) {
	first, second := twoWorkers(t, jetstreamedge.Config{Pipeline: "moves", Replicas: 3, AckWait: time.Second, PinnedTTL: time.Second})
	feed1 := &heldFeed{got: make(chan delivery)}
	u1 := runInlet(t, first, "count", 1, nil, feed1)
	send(t, first, "count", 1, data(3, 10, 11, 12))
	d := receive(t, feed1)
	require.Len(t, d.b.Items, 3)

	feed2 := &heldFeed{got: make(chan delivery)}
	u2 := runInlet(t, second, "count", 1, nil, feed2)
	defer u2.stop()
	// The first worker dies with the message in progress.
	u1.stop()
	first.nc.Close()
	d2 := receive(t, feed2)
	require.Len(t, d2.b.Items, 3, "the new worker has seen none of them")
	d2.done(nil)
	u2.commit(t, d2.b.Position)
	require.Eventually(t, func() bool { return ackPending(t, second, "moves", "count", 1) == 0 }, 10*time.Second, 20*time.Millisecond)
}

// The worker a unit moves to receives the messages the dead worker had
// taken before any newer one, although the newer one is there first and
// the older ones only come again once their ack wait expired.
func TestMovedUnitReceivesOlderMessagesFirst(t *testing.T) {
	first, second := twoWorkers(t, jetstreamedge.Config{Pipeline: "order", Replicas: 3, AckWait: 3 * time.Second, PinnedTTL: time.Second})
	feed1 := &heldFeed{got: make(chan delivery)}
	u1 := runInlet(t, first, "count", 0, nil, feed1)
	send(t, first, "count", 0, data(3, 1))
	send(t, first, "count", 0, data(3, 2))
	receive(t, feed1)
	receive(t, feed1)

	feed2 := &heldFeed{got: make(chan delivery)}
	u2 := runInlet(t, second, "count", 0, nil, feed2)
	defer u2.stop()
	u1.stop()
	first.nc.Close()
	send(t, second, "count", 0, data(3, 3))
	for _, want := range []uint64{1, 2, 3} {
		d := receive(t, feed2)
		require.Len(t, d.b.Items, 1)
		require.Equal(t, want, d.b.Items[0].Particle.Seq, "delivered in the order sent")
		d.done(nil)
	}
}

// A unit that moves restores its predecessor's last checkpoint and takes
// from the stream exactly what that checkpoint does not hold. Here the
// predecessor finished its first message, still held a second one (a
// window holds its particles) when its checkpoint was taken, and took a
// third after it; it dies with the last two unacknowledged. Its successor
// drops the second, which the state holds, acknowledging it, and takes
// the third.
func TestMovedUnitTakesWhatItsCheckpointDoesNotHold(t *testing.T) {
	first, second := twoWorkers(t, jetstreamedge.Config{Pipeline: "restore", Replicas: 3, AckWait: time.Second, PinnedTTL: time.Second})
	feed1 := &heldFeed{got: make(chan delivery)}
	u1 := runInlet(t, first, "window", 0, nil, feed1)
	send(t, first, "window", 0, data(3, 1, 2))
	send(t, first, "window", 0, data(3, 3))
	d1, d2 := receive(t, feed1), receive(t, feed1)
	d1.done(nil)
	pos := u1.commit(t, d2.b.Position)
	require.Eventually(t, func() bool { return ackPending(t, first, "restore", "window", 0) == 1 }, 10*time.Second, 20*time.Millisecond,
		"the first message is acknowledged, the second, held, is not")
	send(t, first, "window", 0, data(3, 4))
	receive(t, feed1)

	feed2 := &heldFeed{got: make(chan delivery)}
	u2 := runInlet(t, second, "window", 0, pos, feed2)
	defer u2.stop()
	u1.stop()
	first.nc.Close()
	d := receive(t, feed2)
	require.Len(t, d.b.Items, 1)
	require.Equal(t, uint64(4), d.b.Items[0].Particle.Seq, "only what came after the checkpoint")
	require.Equal(t, uint64(1), second.t.Stats().Duplicates.Load(), "the message the checkpoint holds is dropped")
	d.done(nil)
	u2.commit(t, d.b.Position)
	require.Eventually(t, func() bool { return ackPending(t, second, "restore", "window", 0) == 0 }, 10*time.Second, 20*time.Millisecond)
}

// A unit that takes no checkpoints cannot run on a Transport: its state
// could move only by redelivery.
func TestInletNeedsCheckpoints(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	w := newWorker(t, c, jetstreamedge.Config{Pipeline: "nockpt"})
	_, in, _ := w.t.Edge("b", 0)
	require.ErrorIs(t, in.Run(context.Background(), &heldFeed{got: make(chan delivery)}), jetstreamedge.ErrNoCheckpoints)
}

// A message JetStream confirmed to its sender that is gone from the
// stream before its unit took it (deleted here, lost with a node's
// storage alike) is a gap nothing fills: the unit waits for it, starts
// again from its newest checkpoint in case its last holder took it since,
// and, missing again, stops with an error that names it.
func TestStoredMessageMissingStopsTheUnit(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	w := newWorker(t, c, jetstreamedge.Config{Pipeline: "missing", AckWait: time.Second, PublishTimeout: time.Second, PinnedTTL: time.Second})
	out, _, _ := w.t.Edge("b", 0)
	sendOne := func(b edge.Batch) {
		durable := make(chan error, 1)
		require.NoError(t, out.Send(context.Background(), &b, func(err error) { durable <- err }))
		require.NoError(t, <-durable)
	}
	feed := &heldFeed{got: make(chan delivery)}
	u := runInlet(t, w, "b", 0, nil, feed)
	sendOne(data(1, 1))
	d := receive(t, feed)
	d.done(nil)
	pos := u.commit(t, d.b.Position)
	require.Eventually(t, func() bool { return ackPending(t, w, "missing", "b", 0) == 0 }, 10*time.Second, 20*time.Millisecond)
	u.stop()

	sendOne(data(1, 2))
	sendOne(data(1, 3))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, streamOf(t, w, "missing").DeleteMsg(ctx, 2), "the sender's second message")

	require.NoError(t, u.Resume(pos))
	require.ErrorIs(t, u.Run(ctx, feed), edge.ErrReleased, "started again from the newest checkpoint")
	require.NoError(t, u.Resume(pos))
	err := u.Run(ctx, feed)
	me, ok := errors.AsType[*jetstreamedge.MissingError](err)
	require.True(t, ok, "stopped with what is missing: %v", err)
	require.Equal(t, jetstreamedge.ConsumerName("b", 0), me.Consumer)
	require.Equal(t, [2]uint64{2, 2}, [2]uint64{me.From, me.To})
	require.Empty(t, feed.got, "the third message waits for the second")
}

// A message whose particles failed is delivered again, whole.
func TestFailedMessageIsDeliveredAgain(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	w := newWorker(t, c, jetstreamedge.Config{Pipeline: "nak"})
	feed := &heldFeed{got: make(chan delivery)}
	u := runInlet(t, w, "b", 0, nil, feed)
	defer u.stop()
	send(t, w, "b", 0, data(1, 5, 6))
	d := receive(t, feed)
	d.done(edge.ErrParticleFailed)
	d = receive(t, feed)
	require.Len(t, d.b.Items, 2, "failed particles are not taken for copies")
	d.done(nil)
}

// orderFeed records the sequence numbers of the particles it receives, in
// order, completes every batch at once and commits a checkpoint after it.
type orderFeed struct {
	releases
	unit edge.Resumer
	mu   sync.Mutex
	seqs []uint64
}

func (f *orderFeed) Deliver(_ context.Context, b *edge.Batch, done func(error)) error {
	f.mu.Lock()
	for _, it := range b.Items {
		f.seqs = append(f.seqs, it.Particle.Seq)
	}
	f.mu.Unlock()
	f.finished(b.Items)
	done(nil)
	pos, err := f.unit.Position(b.Position)
	if err != nil {
		return err
	}
	f.unit.Committed(pos)
	return nil
}

func (f *orderFeed) received() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seqs)
}

// A sender's batches reach the receiver complete and in the order sent
// while the node leading the stream stops: publishes that fail are tried
// again in place, and none fails its particles.
func TestOrderKeptWhileTheStreamLeaderStops(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	cfg := jetstreamedge.Config{Pipeline: "leader", Replicas: 3, AckWait: 2 * time.Second, PublishTimeout: time.Second}
	from, to := newWorker(t, c, cfg), newWorker(t, c, cfg)
	feed := &orderFeed{}
	u := runInlet(t, to, "b", 0, nil, feed)
	defer u.stop()
	leader := streamOf(t, from, "leader").CachedInfo().Cluster.Leader

	const batches, size = 300, 10
	out, _, _ := from.t.Edge("b", 0)
	dones := make(chan error, batches)
	for i := range batches {
		if i == batches/3 {
			// natstest names its servers n1, n2, ...
			n, err := strconv.Atoi(strings.TrimPrefix(leader, "n"))
			require.NoError(t, err)
			c.Stop(n - 1)
		}
		seqs := make([]uint64, size)
		for j := range seqs {
			seqs[j] = uint64(i*size + j + 1)
		}
		b := data(5, seqs...)
		require.NoError(t, out.Send(context.Background(), &b, func(err error) { dones <- err }))
		if i == 0 {
			// The receiver starts the sender's count with the first
			// messages it gets: it must know the sender before a
			// failure, or it takes what is missing for acknowledged.
			require.Eventually(t, func() bool { return len(feed.received()) > 0 }, 20*time.Second, 5*time.Millisecond)
		}
		time.Sleep(2 * time.Millisecond)
	}
	for range batches {
		require.NoError(t, <-dones, "no particle fails for a NATS node away")
	}
	want := make([]uint64, batches*size)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	require.Eventually(t, func() bool { return len(feed.received()) >= len(want) }, 30*time.Second, 20*time.Millisecond)
	got := feed.received()
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("particle %d of %d is %d, not %d; around it: %v", i, len(got), got[i], want[i], got[max(i-15, 0):min(i+15, len(got))])
		}
	}
	require.Len(t, got, len(want), "every particle once")
	t.Logf("transport of the sender: publish failed %d; of the receiver: held back %d, gaps skipped %d",
		from.t.Stats().PublishFailed.Load(), to.t.Stats().HeldBack.Load(), to.t.Stats().GapsSkipped.Load())
}
