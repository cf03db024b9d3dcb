package topology

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

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
	if b.quiet {
		// Barriers only: a unit's checkpoint ends at its edges.
		ri.run.pool.put(b)
		return nil
	}
	rb := &ri.scratch
	*rb = edge.Batch{Input: b.input, Items: rb.Items[:0], High: b.high, Promise: b.promise, Drained: b.drained, EOS: b.eos}
	var edges []anchor
	for i := range b.items {
		env := &b.items[i]
		if barrierOf(env) != 0 {
			continue
		}
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

	// deliverMu puts a unit's barriers between two batches (see barrier).
	// It guards what follows.
	deliverMu sync.Mutex
	// position is the Position of the last batch delivered; ended tells
	// that the instance ended its streams and takes no barrier.
	position uint64
	ended    bool
	// current tells that a batch of this holding found the state
	// restored the newest committed; it is cleared when another process
	// committed the id this one tried, so that the next batch looks again.
	current atomic.Bool
	// fresh tells that batches came since the unit's last checkpoint
	// began; any that batches came since it started holding.
	fresh, any bool
	// restored are the data particles of the sync buffer its unit
	// restored, whose copies are dropped.
	restored map[particleID]struct{}
	// resumer is the Inlet, when the instance checkpoints as a unit;
	// headCtx ends when the instance stops taking batches; gaveUp tells
	// that the Inlet gave the unit to another process.
	resumer edge.Resumer
	headCtx context.Context
	gaveUp  atomic.Bool
}

// errStopped refuses a batch to an instance that stopped taking batches:
// one that ended (restored from its final checkpoint, say) while its
// Inlet still delivers, or one its Inlet released.
var errStopped = fmt.Errorf("%w: the instance takes no more batches", edge.ErrReleased)

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
	if err := f.checkCurrent(ctx); err != nil {
		done(err)
		return err
	}
	if err := f.pending.take(ctx, f.blocked); err != nil {
		done(err)
		return err
	}
	f.deliverMu.Lock()
	defer f.deliverMu.Unlock()
	bt := r.pool.get(rb.Input)
	bt.high, bt.promise, bt.drained, bt.eos = rb.High, rb.Promise, rb.Drained, rb.EOS
	// One tree per batch: every particle is an edge of it, and so is the
	// batch itself, acked once its progress and marks were handed on.
	bt.self = anchor{edge: f.edges.Next()}
	xor := bt.self.edge
	for i := range rb.Items {
		it := &rb.Items[i]
		if _, ok := f.restored[particleID{it.Particle.Origin, it.Particle.Seq}]; ok && it.Particle.Meta == nil {
			continue
		}
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
	if f.headCtx != nil {
		// A unit that ended or was released takes no more: endUnit and
		// the barriers wait for deliverMu, which this holds.
		ib.stop = f.headCtx.Done()
	}
	if err := ib.deliver(ctx, bt); err != nil {
		r.pool.put(bt)
		var ops ackOps
		ops.fail(roots[0], acker.Failed, err)
		r.acks.apply(&ops, new(finished))
		if errors.Is(err, errStopped) && f.b.ended == f.b.inputs {
			// The instance ended (it stopped, so its count is read
			// safely): its Inlet goes on until the unit's end stops it,
			// and learns that the unit ended (edge.ErrEnded).
			return nil
		}
		return err
	}
	if rb.Position != 0 {
		f.position = rb.Position
	}
	f.fresh, f.any = true, true
	return nil
}

// blocked asks the unit for a checkpoint when Deliver waits for unfinished
// batches: those whose inputs a window holds finish with it.
func (f *feed) blocked() error {
	f.Checkpoint()
	return nil
}

// Checkpoint implements edge.Feed.
func (f *feed) Checkpoint() {
	if u := f.b.unit; u != nil {
		u.request()
	}
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

// runRemote runs an instance fed by its edge.Inlet, and the instances
// chained to it, until they end, fail or ctx ends, afresh every time the
// edge.Inlet releases it (edge.ErrReleased). fail takes the errors of the
// chained instances as they return.
func (b *boltInstance) runRemote(srcCtx, drainCtx context.Context, fail func(error)) error {
	for {
		if b.unitStore != nil {
			if err := b.feed.resumer.Acquire(srcCtx); err != nil {
				if srcCtx.Err() != nil {
					return nil
				}
				return err
			}
			if err := b.startUnit(drainCtx); err != nil {
				return err
			}
		}
		inCtx, stopInlet := context.WithCancelCause(srcCtx)
		b.abandon = make(chan struct{})
		b.stopInlet = func() {
			if b.ended == b.inputs {
				stopInlet(edge.ErrEnded)
			} else {
				stopInlet(nil)
			}
		}
		// The unit's checkpoints go on while the instance stops, so that
		// a unit that ended takes its last; a barrier waits for the
		// instance only while it runs.
		unitCtx, stopUnit := context.WithCancel(drainCtx)
		headCtx, headStopped := context.WithCancel(unitCtx)
		unitDone := make(chan struct{})
		if b.unit != nil {
			b.feed.headCtx = headCtx
			go func() {
				defer close(unitDone)
				b.unit.run(unitCtx)
			}()
		} else {
			close(unitDone)
		}
		var inErr error
		givenAway := false
		inletDone := make(chan struct{})
		go func() {
			defer close(inletDone)
			inErr = b.inlet.Run(inCtx, b.feed)
			if inCtx.Err() != nil && !errors.Is(inErr, edge.ErrReleased) {
				inErr = nil
			}
			b.feed.gaveUp.Store(errors.Is(inErr, edge.ErrReleased))
			close(b.abandon)
		}()
		b.startChain(drainCtx, fail)
		err := b.run(drainCtx)
		headStopped()
		b.stopChain()
		if errors.Is(err, edge.ErrReleased) {
			// An outlet refused the end of stream: the transport is
			// handing the instance over, and its inlet returns by itself.
			<-inletDone
			err = nil
		}
		if b.ended == b.inputs {
			// The batches that carried end of stream are done once the
			// whole chain ended: a chained instance may still have
			// flushed windows in its end.
			b.acks.append(&b.eosAcks)
			b.flushAcks()
			if b.unit != nil && err == nil {
				err = b.endUnit(drainCtx)
				switch {
				case err != nil && srcCtx.Err() != nil:
					// Stopping: the unit's next holder takes its last
					// messages again and ends as this one did.
					b.topo.cfg.Logger.Warn("unit ended while the process stopped: its last checkpoint failed", "component", b.name, "instance", b.index, "err", err)
					err = nil
				case errors.Is(err, edge.ErrReleased):
					// Given to another process as it ended (this one
					// was fenced off, say): that one restores the last
					// checkpoint and ends there; this copy starts afresh.
					b.topo.cfg.Logger.Warn("unit given to another process as it ended: its last checkpoint is that one's", "component", b.name, "instance", b.index, "err", err)
					err, givenAway = nil, true
				}
			}
		}
		// The inlet runs until the chain ended, so that it acknowledges the
		// messages whose trees end in a chained instance.
		b.stopInlet()
		<-inletDone
		stopUnit()
		<-unitDone
		switch {
		case err != nil:
			return err
		case b.ended == b.inputs && !givenAway:
			// Ended before it was released: nothing to start again.
			if b.unitStore != nil {
				b.feed.resumer.End(drainCtx)
			}
			return nil
		case !givenAway && !errors.Is(inErr, edge.ErrReleased):
			return inErr
		case srcCtx.Err() != nil:
			return nil
		}
		b.topo.cfg.Logger.Info("instance released to another process: starting afresh", "component", b.name, "instance", b.index, "chained", len(b.chain))
		b.restart()
	}
}

// startChain runs the instances chained to b, each in a goroutine of its
// own, as a local instance runs.
func (b *boltInstance) startChain(ctx context.Context, fail func(error)) {
	for _, c := range b.chain {
		c.abandon, c.done = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(c.done)
			err := c.run(ctx)
			if errors.Is(err, edge.ErrReleased) {
				// An outlet refused its end of stream: the head's inlet
				// is handing the chain over.
				err = nil
			}
			fail(err)
		}()
	}
}

// stopChain waits, once b's run returned, for the instances chained to b
// to return: each whose up stopped without ending its streams is
// abandoned, only once its up returned, which may have been blocked
// handing it a batch; the others end with their up.
func (b *boltInstance) stopChain() {
	for _, c := range b.chain {
		if c.up.ended < c.up.inputs {
			close(c.abandon)
		}
		<-c.done
	}
}

// restart discards the state of the instance and of the instances chained
// to it once they all stopped: what they finished is acknowledged, the
// rest fails, and they start as built. A chained instance holds inputs
// whose trees fail with the unit's: kept, its windows would fire them on
// this process while the unit's next holder takes them again.
func (b *boltInstance) restart() {
	for _, c := range b.chain {
		c.discard()
	}
	b.discard()
	b.feed.failAll(edge.ErrReleased)
	b.feed.setReleased(b.buf.Released())
}

// discard acknowledges what the instance finished, drops what it holds
// and makes it as built.
func (b *boltInstance) discard() {
	b.flushAcks()
	for len(b.inbox) > 0 {
		b.topo.pool.put(<-b.inbox)
	}
	for i := range b.queued {
		b.queued[i].Store(0)
	}
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
	b.ended, b.eosAcks, b.drainedInputs, b.drained = 0, ackOps{}, make([]bool, b.inputs), 0
	b.endedInputs, b.lastWM, b.nextTick = make([]bool, b.inputs), math.MinInt64, math.MinInt64
	b.acks.reset()
	b.full, b.sentDrain, b.buffered, b.bytes = false, false, 0, 0
	b.cur, b.curXor, b.curHeld, b.curDone, b.curChildren = nil, 0, nil, false, 0
	b.heldInputs, b.curAnchor = map[operation.Anchor]*held{}, 0
	clear(b.claimed)
	b.router.reset()
	if b.ckpt != nil {
		// What it deferred fails with the unit's trees.
		b.ckpt = newBoltCheckpoint(b.inputs)
	}
}
