package topology_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// loopback is a Transport within one process: every bolt instance's
// edges go through a queue of copied batches, durable once queued. It
// records how every delivered batch ended.
type loopback struct {
	mu     sync.Mutex
	queues map[string]*queue
	done   []error
	sent   int
}

type queue struct {
	lb      *loopback
	mu      sync.Mutex
	batches []edge.Batch
	ready   chan struct{}
}

func newLoopback() *loopback { return &loopback{queues: map[string]*queue{}} }

func (l *loopback) Edge(bolt string, index int) (edge.Outlet, edge.Inlet, bool) {
	q := &queue{lb: l, ready: make(chan struct{}, 1)}
	l.mu.Lock()
	l.queues[fmt.Sprintf("%s/%d", bolt, index)] = q
	l.mu.Unlock()
	return q, q, true
}

func (q *queue) Send(_ context.Context, b *edge.Batch, done func(error)) error {
	c := *b
	c.Items = slices.Clone(b.Items)
	q.mu.Lock()
	q.batches = append(q.batches, c)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	q.lb.mu.Lock()
	q.lb.sent++
	q.lb.mu.Unlock()
	done(nil)
	return nil
}

func (q *queue) Run(ctx context.Context, feed edge.Feed) error {
	for {
		q.mu.Lock()
		batches := q.batches
		q.batches = nil
		q.mu.Unlock()
		for i := range batches {
			err := feed.Deliver(ctx, &batches[i], func(err error) {
				q.lb.mu.Lock()
				q.lb.done = append(q.lb.done, err)
				q.lb.mu.Unlock()
			})
			if err != nil {
				return err
			}
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// requireAllDone checks that every batch sent was delivered and completed.
func (l *loopback) requireAllDone(t require.TestingT) {
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Len(t, l.done, l.sent, "every batch sent completes once")
	for _, err := range l.done {
		require.NoError(t, err)
	}
}

// A tracked particle's tree completes only once the batch that carried it
// across the transport was durable and every particle of the receiving
// batch completed its own tree; a failure there reaches the receiving
// side's done callback, not the source.
func TestRemoteEdgesAckHopByHop(t *testing.T) {
	lb := newLoopback()
	topo, err := topology.New(topology.Config{Transport: lb, Acking: topology.AckingConfig{Enabled: true, MaxAttempts: 1}})
	require.NoError(t, err)
	src := newTrackedSource(50)
	topo.AddSource("src", topology.Single(src), topology.SourceConfig{})
	failOdd := operation.Func(func(_ context.Context, in particle.Particle, _ operation.Emitter) error {
		if in.Seq%10 == 3 {
			return fmt.Errorf("refused %d", in.Seq)
		}
		return nil
	})
	topo.AddBolt("sink", operation.Stateless(failOdd), topology.BoltConfig{Parallelism: 2}).Input("src", topology.Shuffle())
	require.NoError(t, topo.Run(context.Background()))
	src.assertEachEndedOnce(t)
	require.Zero(t, topo.Stats("src").Failed.Load(), "the source's trees end at the hop")
	lb.mu.Lock()
	defer lb.mu.Unlock()
	require.Len(t, lb.done, lb.sent)
	var failed int
	for _, err := range lb.done {
		if err != nil {
			require.ErrorIs(t, err, edge.ErrParticleFailed)
			failed++
		}
	}
	require.Positive(t, failed, "the batches with a refused particle failed")
}

// Cancelling a run with a transport abandons it: remote-fed instances stop
// without ending their streams, and Run returns without error.
func TestRemoteRunIsAbandonedOnCancel(t *testing.T) {
	lb := newLoopback()
	topo, err := topology.New(topology.Config{Transport: lb, Acking: topology.AckingConfig{Enabled: true}, DrainTimeout: time.Minute})
	require.NoError(t, err)
	started := make(chan struct{})
	topo.AddSource("src", topology.Single(topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		close(started)
		<-ctx.Done()
		return nil
	})), topology.SourceConfig{})
	topo.AddBolt("sink", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error { return nil })), topology.BoltConfig{}).Input("src", topology.Shuffle())
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	require.NoError(t, topo.Run(ctx))
	lb.mu.Lock()
	defer lb.mu.Unlock()
	require.Zero(t, lb.sent, "no end of stream goes out of an abandoned run")
}

func TestTransportNeedsAcking(t *testing.T) {
	_, err := topology.New(topology.Config{Transport: newLoopback()})
	require.ErrorContains(t, err, "acking")
}

// twoChildren emits two particles per input, and one without a parent at
// the first watermark.
type twoChildren struct{ orphaned bool }

func (o *twoChildren) Process(_ context.Context, in particle.Particle, out operation.Emitter) error {
	out.Emit(in)
	out.Emit(in)
	return nil
}

func (o *twoChildren) OnWatermark(_ context.Context, wm int64, out operation.Emitter) error {
	if !o.orphaned {
		o.orphaned = true
		out.Emit(particle.Particle{Time: wm, Measurement: "orphan"})
	}
	return nil
}

// A particle derived from an input has an identity that is a function of
// its parent's and of its place among the parent's children, the same in
// every run and process; one made without a parent is numbered from the
// run's incarnation on. Sources number alike in every run.
func TestDerivedIdentities(t *testing.T) {
	run := func(incarnation uint32) map[string][]uint64 {
		topo, err := topology.New(topology.Config{Incarnation: incarnation})
		require.NoError(t, err)
		var got gatherSeqs
		topo.AddSource("src", topology.Single(topology.SourceFunc(func(_ context.Context, out topology.SourceEmitter) error {
			return out.Emit(particle.Particle{Time: 1, Measurement: "m"})
		})), topology.SourceConfig{})
		topo.AddBolt("pass", operation.Stateless(&twoChildren{}), topology.BoltConfig{}).Input("src", topology.Global())
		topo.AddBolt("sink", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, _ operation.Emitter) error {
			got.add(in.Measurement, in.Seq)
			return nil
		})), topology.BoltConfig{}).Input("pass", topology.Global())
		require.NoError(t, topo.Run(context.Background()))
		return got.seqs
	}
	three, four := run(3), run(4)
	require.Len(t, three["m"], 2)
	assert.Equal(t, three["m"], four["m"], "derived from the same parent, in any incarnation")
	assert.NotEqual(t, three["m"][0], three["m"][1], "two children, two identities")
	assert.Equal(t, []uint64{3<<32 + 1}, three["orphan"])
	assert.Equal(t, []uint64{4<<32 + 1}, four["orphan"])
}

// A window's result is derived from its newest input, so that an instance
// that moved, which fires the window again with only the inputs its
// predecessor had not finished, the newest ones, gives the result the
// identity it had: receivers drop it as a copy.
func TestWindowResultIdentityFromNewestInput(t *testing.T) {
	run := func(skip uint64) uint64 {
		topo, err := topology.New(topology.Config{})
		require.NoError(t, err)
		var got gatherSeqs
		topo.AddSource("src", topology.Single(topology.SourceFunc(func(_ context.Context, out topology.SourceEmitter) error {
			out.Skip(skip)
			for t := 1 + int64(skip); t <= 5; t++ {
				if err := out.Emit(particle.Particle{Time: t, Measurement: "m"}); err != nil {
					return err
				}
			}
			return nil
		})), topology.SourceConfig{})
		count := func() operation.Operation {
			return operation.Batch(operation.Tumbling(10), nil, func(_ context.Context, w operation.Window, _ string, batch []particle.Particle, out operation.Emitter) error {
				out.Emit(particle.Particle{Time: w.Start, Measurement: "count", Fields: []particle.Field{{Key: "n", Value: particle.Int(int64(len(batch)))}}})
				return nil
			})
		}
		topo.AddBolt("window", count, topology.BoltConfig{}).Input("src", topology.Global())
		topo.AddBolt("sink", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, _ operation.Emitter) error {
			got.add(in.Measurement, in.Seq)
			return nil
		})), topology.BoltConfig{}).Input("window", topology.Global())
		require.NoError(t, topo.Run(context.Background()))
		require.Len(t, got.seqs["count"], 1)
		return got.seqs["count"][0]
	}
	assert.Equal(t, run(0), run(3), "the window over its last two inputs has the identity of the whole window")
}

type gatherSeqs struct {
	mu   sync.Mutex
	seqs map[string][]uint64
}

func (g *gatherSeqs) add(from string, seq uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seqs == nil {
		g.seqs = map[string][]uint64{}
	}
	g.seqs[from] = append(g.seqs[from], seq)
}

// A source that skips particles keeps the numbers of those after.
func TestSkipKeepsIdentities(t *testing.T) {
	topo, err := topology.New(topology.Config{})
	require.NoError(t, err)
	var got gatherSeqs
	topo.AddSource("src", topology.Single(topology.SourceFunc(func(_ context.Context, out topology.SourceEmitter) error {
		out.Skip(2)
		return out.Emit(particle.Particle{Time: 1, Measurement: "m"})
	})), topology.SourceConfig{})
	topo.AddBolt("sink", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, _ operation.Emitter) error {
		got.add("src", in.Seq)
		return nil
	})), topology.BoltConfig{}).Input("src", topology.Shuffle())
	require.NoError(t, topo.Run(context.Background()))
	require.Equal(t, []uint64{3}, got.seqs["src"])
}

// A meta particle is an edge of the tree of the remote batch that carried
// it, like a data particle: the batch completes once the meta particle was
// handled and its copies sent, also where nothing is downstream to forward
// it to, and where it is a copy of one handled already (every instance of
// mid forwards it to last).
func TestRemoteMetaParticlesComplete(t *testing.T) {
	lb := newLoopback()
	topo, err := topology.New(topology.Config{Transport: lb, Acking: topology.AckingConfig{Enabled: true}})
	require.NoError(t, err)
	topo.AddSource("src", topology.Single(topology.SourceFunc(func(_ context.Context, out topology.SourceEmitter) error {
		for i := range 10 {
			if err := out.EmitMeta(int64(10*i), metaparticle.Tick{Domain: metaparticle.EventTime}); err != nil {
				return err
			}
			if err := out.Emit(particle.Particle{Time: int64(10*i + 1), Measurement: "m"}); err != nil {
				return err
			}
		}
		return nil
	})), topology.SourceConfig{})
	pass := operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error { out.Emit(in); return nil })
	topo.AddBolt("mid", operation.Stateless(pass), topology.BoltConfig{Parallelism: 2}).Input("src", topology.Shuffle())
	topo.AddBolt("last", operation.Stateless(pass), topology.BoltConfig{}).Input("mid", topology.Global())
	require.NoError(t, topo.Run(context.Background()))
	require.Positive(t, topo.Stats("last").Duplicates.Load(), "last received every meta particle twice")
	lb.requireAllDone(t)
}

// countHeld holds every input until the end of its stream, then emits how
// many it held.
type countHeld struct{ held []operation.Anchor }

func (o *countHeld) Process(_ context.Context, _ particle.Particle, out operation.Emitter) error {
	o.held = append(o.held, out.Hold())
	return nil
}

func (o *countHeld) Flush(_ context.Context, out operation.Emitter) error {
	out.EmitAnchored(particle.Particle{Time: 100, Measurement: "count", Fields: []particle.Field{{Key: "n", Value: particle.Int(int64(len(o.held)))}}}, o.held...)
	for _, a := range o.held {
		out.Ack(a)
	}
	return nil
}

// releasing is a Transport whose inlet of the bolt named bolt delivers
// one batch, waits until processed counts it, and releases the instance;
// then it delivers another batch and end of stream.
type releasing struct {
	*loopback
	bolt      string
	processed *topology.ComponentStats
	runs      int
	dones     [2]chan error
	cause     error // of the end of the second run's context
}

func (r *releasing) Edge(bolt string, index int) (edge.Outlet, edge.Inlet, bool) {
	out, in, ok := r.loopback.Edge(bolt, index)
	if bolt == r.bolt {
		return out, r, ok
	}
	return out, in, ok
}

func (r *releasing) Run(ctx context.Context, feed edge.Feed) error {
	run := r.runs
	r.runs++
	if run > 1 {
		<-ctx.Done()
		return ctx.Err()
	}
	// Far ahead of the particles: the buffer releases them at once.
	const promise = int64(time.Hour)
	b := &edge.Batch{High: promise, Promise: promise, EOS: run == 1}
	for i := range 2 + run {
		b.Items = append(b.Items, edge.Item{Particle: particle.Particle{Time: int64(10*run + i + 1), Origin: 9, Seq: uint64(10*run + i), Measurement: "m"}, High: int64(10*run + i + 1)})
	}
	done := r.dones[run]
	if err := feed.Deliver(ctx, b, func(err error) { done <- err }); err != nil {
		return err
	}
	if run == 1 {
		<-ctx.Done()
		r.cause = context.Cause(ctx)
		return ctx.Err()
	}
	for r.processed.Processed.Load() < 2 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return edge.ErrReleased
}

// An instance whose inlet releases it starts afresh: the batches it had
// not finished fail, so that they are delivered again elsewhere, and what
// its operation held is gone when it runs again. Once it ended, its
// inlet's context tells so.
func TestReleasedInstanceStartsAfresh(t *testing.T) {
	tr := &releasing{loopback: newLoopback(), bolt: "count", dones: [2]chan error{make(chan error, 1), make(chan error, 1)}}
	topo, err := topology.New(topology.Config{Replay: true, Transport: tr, Acking: topology.AckingConfig{Enabled: true}})
	require.NoError(t, err)
	topo.AddSource("src", topology.Single(topology.SourceFunc(func(context.Context, topology.SourceEmitter) error { return nil })), topology.SourceConfig{})
	topo.AddBolt("count", func() operation.Operation { return &countHeld{} }, topology.BoltConfig{}).Input("src", topology.Global())
	tr.processed = topo.Stats("count")
	requireCountsOwnBatch(t, topo, tr)
}

// A bolt chained to a remote-fed one by forward edges is no edge of the
// Transport's: it runs with its chain's head, holds inputs of the head's
// remote batches, and starts afresh with it when the head is released,
// so that what it held fails with the head's batches. The head's end of
// stream is done once the chained instance ended too.
func TestChainRestartsWithItsHead(t *testing.T) {
	tr := &releasing{loopback: newLoopback(), bolt: "head", dones: [2]chan error{make(chan error, 1), make(chan error, 1)}}
	topo, err := topology.New(topology.Config{Replay: true, Transport: tr, Acking: topology.AckingConfig{Enabled: true}})
	require.NoError(t, err)
	topo.AddSource("src", topology.Single(topology.SourceFunc(func(context.Context, topology.SourceEmitter) error { return nil })), topology.SourceConfig{})
	pass := operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error { out.Emit(in); return nil })
	topo.AddBolt("head", operation.Stateless(pass), topology.BoltConfig{}).Input("src", topology.Global())
	// Declared before the bolt it takes from: a chain is in the order of
	// its edges.
	topo.AddBolt("count", func() operation.Operation { return &countHeld{} }, topology.BoltConfig{}).Input("mid", topology.Forward())
	topo.AddBolt("mid", operation.Stateless(pass), topology.BoltConfig{}).Input("head", topology.Forward())
	tr.processed = topo.Stats("count")
	requireCountsOwnBatch(t, topo, tr)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	assert.NotContains(t, tr.queues, "mid/0", "a chained instance has no edge of its own")
	assert.NotContains(t, tr.queues, "count/0", "a chained instance has no edge of its own")
	assert.Contains(t, tr.queues, "sink/0")
}

// requireCountsOwnBatch adds to topo a sink of what count emits, runs it
// on tr and checks that the batch held when the instance was released
// failed and the second run counted only its own.
func requireCountsOwnBatch(t *testing.T, topo *topology.Topology, tr *releasing) {
	t.Helper()
	var got []int64
	topo.AddBolt("sink", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, _ operation.Emitter) error {
		n, _ := in.Field("n")
		got = append(got, n.IntValue())
		return nil
	})), topology.BoltConfig{}).Input("count", topology.Global())
	require.NoError(t, topo.Run(context.Background()))
	require.ErrorIs(t, <-tr.dones[0], edge.ErrParticleFailed, "the batch held when released fails")
	require.NoError(t, <-tr.dones[1])
	require.Equal(t, []int64{3}, got, "the second run counts only its own batch")
	require.Equal(t, 2, tr.runs)
	require.ErrorIs(t, tr.cause, edge.ErrEnded, "the inlet learns that its instance ended")
}
