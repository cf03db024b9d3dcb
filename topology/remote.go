package topology

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// remoteInbox is the inbox of a bolt instance in another process, as seen
// by one upstream instance.
type remoteInbox struct {
	out     edge.Outlet
	run     *run
	scratch edge.Batch
}

// errAbandoned is what a remote inbox returns once Run's context ended:
// the process stops without ending the streams that others continue.
var errAbandoned = errors.New("topology: run abandoned to the other processes")

func (ri *remoteInbox) deliver(ctx context.Context, b *batch) error {
	if ri.run.stopped() {
		return errAbandoned
	}
	rb := &ri.scratch
	*rb = edge.Batch{Input: b.input, Items: rb.Items[:0], High: b.high, Promise: b.promise, Drained: b.drained, EOS: b.eos}
	var edges []anchor
	for i := range b.items {
		env := &b.items[i]
		rb.Items = append(rb.Items, edge.Item{Particle: env.p, High: env.high, Replay: env.replay})
		env.each(func(a anchor) { edges = append(edges, a) })
	}
	done := ri.completer(edges)
	err := ri.out.Send(ctx, rb, done)
	clear(rb.Items)
	if err != nil {
		return err
	}
	ri.run.pool.put(b)
	return nil
}

// completer returns the callback that completes or fails the copies sent
// in one batch: sent and durable, a copy is processed.
func (ri *remoteInbox) completer(edges []anchor) func(error) {
	return func(err error) {
		if ri.run.acks == nil || len(edges) == 0 {
			return
		}
		var ops ackOps
		for _, a := range edges {
			if err != nil {
				ops.fail(a.root, acker.Failed, err)
			} else {
				ops.update(a.root, a.edge)
			}
		}
		ri.run.acks.apply(&ops, new(finished))
	}
}

// feed is a bolt instance's Feed.
type feed struct {
	b       *boltInstance
	origin  uint32 // its trees' origin in the ack service
	pending *tokens
	edges   *acker.EdgeIDs

	mu    sync.Mutex // guards what follows
	next  uint64
	dones map[uint64]feedTree // by tree msgID
	// released is what Released returns, set by the instance after each
	// release.
	released    syncbuffer.Key
	hasReleased bool
}

// feedTree is the tree of a batch delivered and not yet finished.
type feedTree struct {
	root acker.RootID
	done func(error)
}

// finish reports the outcome of a batch's tree to its done callback.
func (f *feed) finish(o *outcome) {
	f.mu.Lock()
	done := f.dones[o.msgID].done
	delete(f.dones, o.msgID)
	f.mu.Unlock()
	f.pending.give(1)
	switch {
	case o.done:
		done(nil)
	case o.err != nil:
		done(fmt.Errorf("%w: %s: %w", edge.ErrParticleFailed, o.reason, o.err))
	default:
		done(fmt.Errorf("%w: %s", edge.ErrParticleFailed, o.reason))
	}
}

var _ edge.Feed = (*feed)(nil)

// Released implements Feed.
func (f *feed) Released() (syncbuffer.Key, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.released, f.hasReleased
}

// setReleased records what the instance's buffer released last.
func (f *feed) setReleased(k syncbuffer.Key, ok bool) {
	f.mu.Lock()
	f.released, f.hasReleased = k, ok
	f.mu.Unlock()
}

func (f *feed) Deliver(ctx context.Context, rb *edge.Batch, done func(error)) error {
	if rb.Input < 0 || rb.Input >= f.b.inputs {
		err := fmt.Errorf("topology: bolt %s[%d]: remote batch from input %d of %d", f.b.name, f.b.index, rb.Input, f.b.inputs)
		done(err)
		return err
	}
	r := f.b.topo
	if err := f.pending.take(ctx, func() error { return nil }); err != nil {
		done(err)
		return err
	}
	bt := r.pool.get(rb.Input)
	bt.high, bt.promise, bt.drained, bt.eos = rb.High, rb.Promise, rb.Drained, rb.EOS
	// One tree per batch: every particle is an edge of it, and so is the
	// batch itself, acked once its progress and marks were handed on.
	bt.self = anchor{edge: f.edges.Next()}
	xor := bt.self.edge
	for i := range rb.Items {
		it := &rb.Items[i]
		e := f.edges.Next()
		xor ^= e
		bt.items = append(bt.items, envelope{p: it.Particle, high: it.High, replay: it.Replay, first: anchor{edge: e}, tracked: true})
	}
	f.mu.Lock()
	f.next++
	id := f.next
	f.dones[id] = feedTree{done: done}
	f.mu.Unlock()
	roots := r.acks.startAll([]newTree{{tree: tree{msgID: id, origin: f.origin}, xor: xor}}, nil, new(finished))
	f.mu.Lock()
	if t, ok := f.dones[id]; ok {
		t.root = roots[0]
		f.dones[id] = t
	}
	f.mu.Unlock()
	bt.self.root = roots[0]
	for i := range bt.items {
		bt.items[i].first.root = roots[0]
	}
	r.advance(rb.High)
	ib := chanInbox{ch: f.b.inbox, backlog: &f.b.backlog, wall: r.wallNanos}
	if err := ib.deliver(ctx, bt); err != nil {
		r.pool.put(bt)
		var ops ackOps
		ops.fail(roots[0], acker.Failed, err)
		r.acks.apply(&ops, new(finished))
		return err
	}
	return nil
}

// failAll fails the trees of the batches delivered and not finished. The
// edge.Inlet must have returned: nothing is delivered meanwhile.
func (f *feed) failAll(err error) {
	f.mu.Lock()
	var ops ackOps
	for _, t := range f.dones {
		ops.fail(t.root, acker.Failed, err)
	}
	f.mu.Unlock()
	f.b.topo.acks.apply(&ops, new(finished))
}

// runRemote runs an instance fed by its edge.Inlet until it ends, fails or ctx
// ends, afresh every time the edge.Inlet releases it (edge.ErrReleased).
func (b *boltInstance) runRemote(srcCtx, drainCtx context.Context) error {
	for {
		inCtx, stopInlet := context.WithCancelCause(srcCtx)
		b.abandon = make(chan struct{})
		b.stopInlet = func() {
			if b.ended == b.inputs {
				stopInlet(edge.ErrEnded)
			} else {
				stopInlet(nil)
			}
		}
		var inErr error
		inletDone := make(chan struct{})
		go func() {
			defer close(inletDone)
			inErr = b.inlet.Run(inCtx, b.feed)
			if inCtx.Err() != nil && !errors.Is(inErr, edge.ErrReleased) {
				inErr = nil
			}
			close(b.abandon)
		}()
		err := b.run(drainCtx)
		b.stopInlet()
		<-inletDone
		switch {
		case err != nil:
			return err
		case b.ended == b.inputs:
			// Ended before it was released: nothing to start again.
			return nil
		case !errors.Is(inErr, edge.ErrReleased):
			return inErr
		case srcCtx.Err() != nil:
			return nil
		}
		b.topo.cfg.Logger.Info("instance released to another process: starting afresh", "component", b.name, "instance", b.index)
		b.restart()
	}
}

// restart discards the instance's state once it stopped: what it finished
// is acknowledged, the rest fails, and it starts as built.
func (b *boltInstance) restart() {
	b.flushAcks()
	for len(b.inbox) > 0 {
		b.topo.pool.put(<-b.inbox)
	}
	b.feed.failAll(edge.ErrReleased)
	b.stats.Buffered.Add(-b.buffered)
	b.stats.BufferedBytes.Add(-b.bytes)
	buf, err := syncbuffer.New(b.buf.Config(), b.inputs, envelopeKey, envelopeIsMeta)
	if err != nil {
		// The configuration was accepted when the instance was built.
		panic("topology: rebuilding a sync buffer: " + err.Error())
	}
	buf.MeasureWith(envelopeSize)
	b.buf = buf
	b.op, b.caps = b.newOperation()
	b.feed.setReleased(buf.Released())
	b.ended, b.eosAcks, b.drainedInputs, b.drained = 0, ackOps{}, make([]bool, b.inputs), 0
	b.endedInputs, b.lastWM, b.nextTick = make([]bool, b.inputs), math.MinInt64, math.MinInt64
	b.acks.reset()
	b.full, b.sentDrain, b.buffered, b.bytes = false, false, 0, 0
	b.cur, b.curXor, b.curHeld, b.curDone, b.curChildren = nil, 0, nil, false, 0
	b.heldInputs, b.curAnchor = map[operation.Anchor]*held{}, 0
	clear(b.claimed)
	b.router.reset()
}
