package topology

import (
	"context"
	"errors"
	"fmt"
	"github.com/sensorstorm/sensorstorm/checkpoint"
	"math"
	"runtime/debug"
	"sync/atomic"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// LateStream is the stream on which a bolt with the LateSide policy emits
// its late particles; wire it with Bolt.InputStream.
const LateStream = "late"

// ErrFutureTimestamp is the error of a particle further ahead of the stream
// clock than the bolt's future bound.
var ErrFutureTimestamp = errors.New("topology: timestamp too far ahead of the stream clock")

// held is an input an operation keeps pending past Process.
type held struct {
	env envelope
	// xors holds, per tree of env (in the order of envelope.each), the
	// edges of the children that tree must see acked through this input.
	xors []uint64
	// first backs xors for an input of one tree, the common case, so that
	// holding it takes one allocation.
	first [1]uint64
	// children counts the particles derived from the input (see derive).
	children uint32
}

// spareHelds bounds the held inputs an instance keeps for reuse.
const spareHelds = 1024

// newHeld holds env, reusing a held input given back.
func (b *boltInstance) newHeld(env *envelope, xor uint64) *held {
	var h *held
	if n := len(b.spareHelds); n > 0 {
		h = b.spareHelds[n-1]
		b.spareHelds = b.spareHelds[:n-1]
	} else {
		h = new(held)
	}
	h.env = *env
	h.children = b.curChildren
	if len(env.moreAnchors()) == 0 {
		h.xors = h.first[:]
	} else {
		h.xors = make([]uint64, 1+len(env.moreAnchors()))
	}
	h.add(xor)
	return h
}

// recycle gives back a held input that nothing refers to any more.
func (b *boltInstance) recycle(h *held) {
	if len(b.spareHelds) < spareHelds {
		*h = held{}
		b.spareHelds = append(b.spareHelds, h)
	}
}

// add accounts children anchored to the input in every one of its trees.
func (h *held) add(xor uint64) {
	for i := range h.xors {
		h.xors[i] ^= xor
	}
}

// boltInstance runs one instance of a bolt in its own goroutine.
type boltInstance struct {
	name   string
	index  int
	origin uint32
	op     operation.Operation
	caps   capabilities
	// factory makes the operation again when the instance restarts.
	factory operation.Factory
	buf     *syncbuffer.Buffer[envelope]
	late    syncbuffer.LatePolicy
	inbox   chan *batch
	inputs  int
	ended   int
	// endedInputs marks the inputs whose end of stream arrived: a remote
	// input may deliver it twice.
	endedInputs []bool
	// outlet and inlet are the ends of the edges into this instance when
	// they cross processes; abandon closes when the inlet stops, and
	// stopInlet stops it. eosAcks are the remote batches' own edges that
	// carried end of stream: acked once this instance ended its streams.
	outlet    edge.Outlet
	inlet     edge.Inlet
	feed      *feed
	abandon   chan struct{}
	stopInlet func()
	eosAcks   ackOps
	// up is the instance that a chained instance takes all its input
	// from, on forward edges; head is the instance up those edges that an
	// edge.Inlet feeds, which runs it and stops and restarts it with
	// itself. chain, of a head, lists the instances chained to it, each
	// after its up; done closes when a chained instance's run returned.
	up, head *boltInstance
	chain    []*boltInstance
	done     chan struct{}
	// drainedInputs marks the inputs that sent no new data since drained
	// or ended; once all have, the instance drains its own outputs.
	drainedInputs []bool
	drained       int
	topo          *run
	stats         *ComponentStats
	router        router
	edges         *acker.EdgeIDs
	acks          ackOps
	finished      finished
	seq           uint64
	lastWM        int64
	// nextTick is the stream time of the next engine tick.
	nextTick int64
	// full tells that the buffer is full and the inbox is not read.
	full bool
	// gaveUp is set once a destination failed for good: the instance
	// stops, acknowledging and failing nothing more.
	gaveUp error
	// failing is set while attempt retries a failing destination.
	failing   atomic.Pointer[destinationFailure]
	sentDrain bool
	buffered  int64 // this instance's share of stats.Buffered
	bytes     int64 // and of stats.BufferedBytes
	backlog   backlog
	// queued counts, per input, the batches its sender has delivered or
	// is delivering to the inbox and this instance has not received yet;
	// nil when inputs are never idle.
	queued []atomic.Int64

	// the input being processed: its children's edges go to curXor, or to
	// curHeld once the operation holds it; curDone once it acked or failed
	// it itself; curChildren counts the particles derived from it until it
	// is held, then curHeld does
	cur         *envelope
	curXor      uint64
	curHeld     *held
	curDone     bool
	curChildren uint32
	// curDeferred is set once the operation held the input while the run
	// takes checkpoints: its acknowledgement waits for the next one.
	curDeferred bool
	// ckpt is the instance's side of checkpoints; nil without them.
	ckpt *boltCheckpoint
	// unit is the coordinator of the checkpoints of the unit the instance
	// heads, while its Inlet runs, and unitStore where they go: with a
	// Transport, an instance an Inlet feeds checkpoints with the
	// instances chained to it.
	unit      *coordinator
	unitStore checkpoint.Store

	// released and emitted hold the envelope being processed and the one
	// being emitted, so that taking their address does not allocate.
	released, emitted envelope

	heldInputs map[operation.Anchor]*held
	spareHelds []*held // see newHeld
	claims     []claim // scratch for EmitAnchored
	claimed    map[acker.RootID]struct{}
	nextAnchor operation.Anchor
	curAnchor  operation.Anchor
}

var _ operation.Emitter = (*boltInstance)(nil)

func (b *boltInstance) run(ctx context.Context) error {
	ticks, stop := b.topo.cfg.Wall.NewTicker(b.topo.cfg.HousekeepingInterval)
	defer stop()
	b.pushRestored(ctx)
	for b.ended < b.inputs {
		// A full buffer takes nothing more until the watermark moves: the
		// senders block, which is backpressure.
		inbox := b.inbox
		if b.checkFull() {
			inbox = nil
		}
		select {
		case bt := <-inbox:
			b.receive(ctx, bt)
		case <-ticks:
			b.housekeep(ctx)
		case <-b.abandon:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
		if b.gaveUp != nil {
			return b.gaveUp
		}
	}
	b.release(ctx, b.now())
	b.stats.Buffered.Add(-b.buffered)
	b.stats.BufferedBytes.Add(-b.bytes)
	b.buffered, b.bytes = 0, 0
	b.watermark(ctx, math.MaxInt64)
	if f := b.caps.flush; f != nil {
		b.attempt(ctx, func() error { return f.Flush(ctx, b) })
	}
	if b.gaveUp != nil {
		return b.gaveUp
	}
	b.failHeld(errors.New("topology: end of stream with held input"))
	b.flushAcks()
	if err := b.router.endOfStream(ctx); err != nil {
		return err
	}
	b.stats.Ended.Add(1)
	if b.ckpt != nil {
		b.finalShare(ctx)
	}
	return nil
}

// checkFull reports whether the buffer is full, and logs when it fills.
func (b *boltInstance) checkFull() bool {
	full := b.buf.Full()
	if full && !b.full {
		b.stats.FullBuffers.Add(1)
		b.topo.cfg.Logger.Warn("sync buffer full: taking no input until the watermark moves",
			"component", b.name, "instance", b.index, "buffered", b.buf.Len())
	}
	b.full = full
	return full
}

// now returns the stream clock's time.
func (b *boltInstance) now() int64 { return b.topo.clock.Now() }

func (b *boltInstance) receive(ctx context.Context, bt *batch) {
	// The batch's later particles, and whatever is left in the inbox, wait
	// while this batch is processed.
	b.settleBacklog(len(bt.items) > 1)
	b.stats.In.Add(uint64(len(bt.items)))
	now := b.now()
	for i := range bt.items {
		env := &bt.items[i]
		if b.ckpt != nil {
			if id := barrierOf(env); id != 0 {
				b.onBarrier(ctx, bt.input, id)
				continue
			}
			b.record(bt.input, env)
		}
		b.pushOne(ctx, bt.input, env, now)
	}
	if !bt.quiet {
		b.buf.Advance(bt.input, bt.high, bt.promise, now)
	}
	if (bt.drained || bt.eos) && !b.drainedInputs[bt.input] {
		b.drainedInputs[bt.input] = true
		b.drained++
		b.buf.EndOfStream(bt.input)
	}
	if bt.eos && !b.endedInputs[bt.input] {
		b.endedInputs[bt.input] = true
		b.ended++
		b.inputEnded(bt.input)
	}
	self, eos := bt.self, bt.eos
	if b.queued != nil && b.outlet == nil && !bt.quiet {
		b.queued[bt.input].Add(-1)
	}
	b.topo.pool.put(bt)
	b.release(ctx, b.now())
	b.settle(ctx)
	if b.drained == b.inputs && b.ended < b.inputs && !b.sentDrain {
		b.sentDrain = true
		// Undelivered, the marked batches stay pending, as in handOn.
		_ = b.router.drain(ctx)
	}
	if self.root != 0 {
		// A remote batch is done once its progress and marks were handed
		// on; its end of stream, once this instance ended its own.
		if eos {
			b.eosAcks.update(self.root, self.edge)
		} else {
			b.acks.update(self.root, self.edge)
			b.flushAcks()
		}
	}
}

// pushOne pushes env, which came on input, into the buffer, and deals at
// once with what the buffer would not order.
func (b *boltInstance) pushOne(ctx context.Context, input int, env *envelope, now int64) {
	switch b.buf.Push(input, *env, now) {
	case syncbuffer.Late:
		b.handleLate(ctx, env, false)
	case syncbuffer.Behind:
		b.handleLate(ctx, env, true)
	case syncbuffer.Invalid:
		b.handleInvalid(ctx, env)
	case syncbuffer.Duplicate:
		// A copy of a meta particle already handled: dropped, it is
		// done.
		b.stats.Duplicates.Add(1)
		b.ackInput(env, 0)
	}
}

// settle hands on what the last round produced and accounts the time the
// instance had work waiting, for the acker's progress timeout.
func (b *boltInstance) settle(ctx context.Context) {
	b.flushAcks()
	b.router.handOn(ctx, false)
	b.settleBacklog(false)
	n := int64(b.buf.Len())
	b.stats.Buffered.Add(n - b.buffered)
	b.buffered = n
	bytes := b.buf.Bytes()
	b.stats.BufferedBytes.Add(bytes - b.bytes)
	b.bytes = bytes
}

// settleBacklog accounts the time the instance had work waiting: busy, or
// anything in its inbox. Particles in its sync buffer wait for the
// watermark, not for the instance: they do not count, so that the progress
// timeout still finds a lost tree while data flows through a window (the
// timeouts outlast the buffers' windows; see Config).
func (b *boltInstance) settleBacklog(busy bool) {
	now := b.topo.wallNanos()
	b.backlog.close(now)
	if busy || len(b.inbox) > 0 {
		b.backlog.mark(now)
	}
}

func (b *boltInstance) housekeep(ctx context.Context) {
	now := b.now()
	b.release(ctx, now)
	b.tick(ctx, now)
	if h := b.caps.tick; h != nil {
		if err := b.attempt(ctx, func() error { return h.OnTick(ctx, now, b) }); err != nil && b.gaveUp == nil {
			b.stats.Errors.Add(1)
			b.topo.cfg.Logger.Warn("tick handler failed", "component", b.name, "instance", b.index, "err", err)
		}
	}
	for _, h := range b.heldInputs {
		// An input held by a live operation makes progress by being held.
		h.env.each(func(a anchor) { b.acks.update(a.root, 0) })
	}
	b.settle(ctx)
}

// tick hands the operation the engine's tick once the stream clock has
// passed the next multiple of the tick interval. Ticks are the engine's,
// not a stream's: every instance gets its own and forwards none.
func (b *boltInstance) tick(ctx context.Context, now int64) {
	every := int64(b.topo.cfg.TickInterval)
	if every <= 0 || now < b.nextTick || now == math.MinInt64 {
		return
	}
	at := now - now%every
	b.nextTick = at + every
	b.released = envelope{p: particle.Particle{Time: at, Seq: uint64(at / every), Meta: metaparticle.Tick{Domain: metaparticle.StreamTime}}}
	b.handleMeta(ctx, &b.released, false)
}

// release processes what the buffer releases at now, then tells the
// operation how far event time has progressed.
func (b *boltInstance) release(ctx context.Context, now int64) {
	for i := range b.queued {
		// Batches waiting in the inbox are a sign of life: a bolt that
		// was slow to read them must not find their sender idle.
		if b.queued[i].Load() > 0 {
			b.buf.Advance(i, math.MinInt64, math.MinInt64, now)
		}
	}
	b.buf.Release(now, func(env envelope) bool {
		// The released envelope lives in the instance, not on the heap:
		// operations and routing take its address.
		b.released = env
		if env.p.Meta != nil {
			b.handleMeta(ctx, &b.released, true)
		} else {
			b.process(ctx, &b.released)
		}
		if b.router.full > 0 {
			// A large release hands on full batches as it goes rather
			// than grow them: memory stays bounded, and downstream works
			// meanwhile. The acks of the inputs processed go first, so
			// that no child is acked before its tree knows of it.
			b.flushAcks()
			b.router.handOn(ctx, true)
		}
		return true
	})
	if b.feed != nil {
		b.feed.setReleased(b.buf.Released())
	}
	if wm, ok := b.buf.Watermark(now); ok {
		b.watermark(ctx, wm)
	}
}

// watermark tells the operation that event time has reached wm, then sets
// the promise forwarded downstream: nothing at or below the watermark will
// be emitted, nor anything before what the operation still holds.
func (b *boltInstance) watermark(ctx context.Context, wm int64) {
	if wm <= b.lastWM {
		return
	}
	b.lastWM = wm
	b.stats.Watermark.Store(wm)
	if h := b.caps.watermark; h != nil {
		b.attempt(ctx, func() error { return h.OnWatermark(ctx, wm, b) })
	}
	promise := wm
	if h := b.caps.hold; h != nil && wm != math.MaxInt64 {
		promise = min(promise, h.OutputHold(wm)-1)
	}
	b.router.promise = max(b.router.promise, promise)
}

func (b *boltInstance) process(ctx context.Context, env *envelope) {
	if b.gaveUp != nil {
		return
	}
	b.cur, b.curXor, b.curHeld, b.curDone, b.curChildren, b.curDeferred = env, 0, nil, false, 0, false
	err := b.attempt(ctx, func() error { return b.op.Process(ctx, env.p, b) })
	b.stats.Processed.Add(1)
	switch {
	case b.gaveUp != nil:
		// Neither acknowledged nor failed: the next run replays it.
	case b.curDone, b.curHeld != nil && err == nil:
	case b.curDeferred && err == nil:
		b.deferInput(env, b.curXor)
	case err != nil:
		if b.curHeld != nil {
			b.take(b.curAnchor)
		}
		if b.curDeferred {
			delete(b.ckpt.idents, b.curAnchor)
		}
		if errors.Is(err, operation.ErrRejected) {
			b.reject(env, err)
		} else {
			b.failInput(ctx, env, err)
		}
	default:
		b.ackInput(env, b.curXor)
	}
	b.cur, b.curHeld = nil, nil
}

// reject dead-letters an input the operation rejected as bad data, and
// acknowledges it: retrying bad data would only fail again.
func (b *boltInstance) reject(env *envelope, err error) {
	b.deadLetterRejected(env, err)
	b.ackInput(env, b.curXor)
}

func (b *boltInstance) deadLetterRejected(env *envelope, err error) {
	b.stats.Invalid.Add(1)
	p := env.p
	b.topo.deadLetter(DeadLetter{Component: b.name, Instance: b.index, Reason: "rejected", Err: err, Particle: &p})
}

// call runs an operation callback, turning a panic into a *PanicError.
func (b *boltInstance) call(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			b.stats.Panics.Add(1)
			err = &PanicError{Component: fmt.Sprintf("%s[%d]", b.name, b.index), Value: v, Stack: debug.Stack()}
			b.topo.cfg.Logger.Error("operation panicked", "component", b.name, "instance", b.index, "panic", fmt.Sprint(v))
		}
	}()
	return fn()
}

func (b *boltInstance) ackInput(env *envelope, xor uint64) {
	if !env.tracked {
		return
	}
	// Not env.each: this runs for every input, and the closure cost more
	// than the appends.
	b.acks.update(env.first.root, env.first.edge^xor)
	for _, a := range env.moreAnchors() {
		b.acks.update(a.root, a.edge^xor)
	}
}

func (b *boltInstance) failInput(ctx context.Context, env *envelope, err error) {
	b.stats.Errors.Add(1)
	reason := acker.Failed
	var pe *PanicError
	if errors.As(err, &pe) {
		reason = acker.Panic
	}
	if !env.tracked {
		b.stats.DeadLettered.Add(1)
		p := env.p
		b.topo.deadLetter(DeadLetter{Component: b.name, Instance: b.index, Reason: reason.String(), Err: err, Particle: &p})
		return
	}
	env.each(func(a anchor) { b.acks.fail(a.root, reason, err) })
}

// handleMeta hands a meta particle to the operation, then forwards it to
// every downstream instance unless it is the engine's own tick. A meta
// particle that came through an edge.Feed is tracked, as an edge of its remote
// batch's tree: it is done once handled, and its copies once they are.
func (b *boltInstance) handleMeta(ctx context.Context, env *envelope, forward bool) {
	if h := b.caps.meta; h != nil {
		if err := b.call(func() error { return h.HandleMeta(ctx, env.p, b) }); err != nil {
			b.stats.Errors.Add(1)
			b.topo.cfg.Logger.Warn("meta handler failed", "component", b.name, "instance", b.index, "meta", env.p.Meta.MetaType(), "err", err)
		}
	}
	b.stats.Meta.Add(1)
	var xor uint64
	if forward {
		xor = b.router.route("", env, b.edges)
	}
	b.ackInput(env, xor)
}

// handleLate deals with a particle its buffer would not order: late for
// its input, or behind what was already released. A meta particle behind
// is a new identity, handled and forwarded at once.
func (b *boltInstance) handleLate(ctx context.Context, env *envelope, behind bool) {
	switch {
	case env.p.Meta != nil && behind:
		b.handleMeta(ctx, env, true)
		return
	case env.p.Meta != nil:
		b.stats.Late.Add(1)
		b.ackInput(env, 0)
		return
	case behind:
		b.stats.Behind.Add(1)
	default:
		b.stats.Late.Add(1)
	}
	switch {
	case env.replay:
		// A replayed particle is old by nature; processing it out of
		// order beats losing it.
		b.process(ctx, env)
	case b.late == syncbuffer.LatePass:
		b.process(ctx, env)
	case b.late == syncbuffer.LateSide:
		b.cur, b.curXor, b.curChildren = env, 0, 0
		b.emit(LateStream, env.p)
		b.cur = nil
		b.ackInput(env, b.curXor)
	default:
		b.ackInput(env, 0)
	}
}

func (b *boltInstance) handleInvalid(ctx context.Context, env *envelope) {
	b.stats.Invalid.Add(1)
	p := env.p
	err := fmt.Errorf("%w: %s at %d, stream clock at %d", ErrFutureTimestamp, p.EventTime(), p.Time, b.now())
	b.topo.deadLetter(DeadLetter{Component: b.name, Instance: b.index, Reason: "invalid", Err: err, Particle: &p})
	b.ackInput(env, 0)
}

// Emit implements operation.Emitter.
func (b *boltInstance) Emit(p particle.Particle) { b.emit("", p) }

func (b *boltInstance) emit(stream string, p particle.Particle) {
	switch {
	case p.Meta != nil || b.cur == nil:
		b.seq++
		p.Seq = b.seq
	case b.curHeld != nil:
		p.Seq = derive(&b.curHeld.env.p, &b.curHeld.children)
	case b.curDeferred:
		p.Seq = b.deriveFromIdent(b.curAnchor, &b.cur.p)
	default:
		p.Seq = derive(&b.cur.p, &b.curChildren)
	}
	p.Origin = b.origin
	env := &b.emitted
	*env = envelope{p: p}
	if p.Meta == nil && b.cur != nil && b.cur.tracked && !b.curDone {
		env.first, env.more, env.tracked, env.replay = b.cur.first, b.cur.more, true, b.cur.replay
	}
	x := b.router.route(stream, env, b.edges)
	if b.curHeld != nil {
		b.curHeld.add(x)
	} else {
		b.curXor ^= x
	}
	b.stats.Out.Add(1)
}

// Hold implements operation.Emitter.
func (b *boltInstance) Hold() operation.Anchor {
	if b.cur == nil {
		panic("topology: Hold called outside Process")
	}
	if b.ckpt != nil {
		// The next checkpoint holds the input's effect: it is
		// acknowledged then; the anchor keeps its identity only.
		if !b.curDeferred {
			b.nextAnchor++
			b.curAnchor = b.nextAnchor | operation.CheckpointedAnchor
			b.ckpt.idents[b.curAnchor] = ident{key: envelopeKey(b.cur), children: b.curChildren}
			b.curDeferred = true
		}
		return b.curAnchor
	}
	if b.curHeld == nil && !b.curDone {
		b.nextAnchor++
		b.curAnchor = b.nextAnchor
		b.curHeld = b.newHeld(b.cur, b.curXor)
		b.heldInputs[b.curAnchor] = b.curHeld
	}
	return b.curAnchor
}

// EmitAnchored implements operation.Emitter.
//
// Each tree of the anchors is charged to exactly one held input, the first
// that belongs to it, and the child joins that tree. (Storm xors the child's
// edge into every anchor, so that a tree reached through two anchors, or the
// same anchor twice, could complete before the child was processed.)
func (b *boltInstance) EmitAnchored(p particle.Particle, anchors ...operation.Anchor) {
	p.Origin, p.Seq = b.origin, 0
	if p.Meta == nil {
		// Derived from the newest input, so that an instance that moved
		// and fires a window again with the inputs its predecessor had
		// not finished, the newest ones, gives the result the identity
		// it had (see package jetstreamedge).
		var newest *held
		for _, a := range anchors {
			if h := b.heldInputs[a]; h != nil && (newest == nil || envelopeKey(&newest.env).Less(envelopeKey(&h.env))) {
				newest = h
			}
		}
		if newest != nil {
			p.Seq = derive(&newest.env.p, &newest.children)
		}
		if b.ckpt != nil {
			p.Seq = b.deriveFromNewest(anchors)
		}
	}
	if p.Seq == 0 {
		b.seq++
		p.Seq = b.seq
	}
	env := &b.emitted
	*env = envelope{p: p}
	b.claims = b.claims[:0]
	if len(b.claimed) > 0 {
		// Only a large emit fills the index; clearing costs its capacity.
		clear(b.claimed)
	}
	for _, a := range anchors {
		h := b.heldInputs[a]
		if h == nil {
			continue
		}
		i := 0
		h.env.each(func(an anchor) {
			defer func() { i++ }()
			if !b.claim(claim{root: an.root, h: h, i: i}) {
				return
			}
			if !env.tracked {
				env.first, env.tracked, env.replay = anchor{root: an.root}, true, h.env.replay
			} else {
				env.addMore(anchor{root: an.root})
			}
		})
	}
	x := b.router.route("", env, b.edges)
	for _, c := range b.claims {
		c.h.xors[c.i] ^= x
	}
	b.stats.Out.Add(1)
}

// claim charges one tree of an EmitAnchored child to one held input.
type claim struct {
	root acker.RootID
	h    *held
	i    int
}

// linearClaims is how many claims EmitAnchored scans before it indexes
// them: a window result anchored to thousands of roots must not cost their
// square.
const linearClaims = 32

// claim adds c unless its tree is already claimed, and reports whether it
// did.
func (b *boltInstance) claim(c claim) bool {
	if len(b.claims) < linearClaims {
		for _, o := range b.claims {
			if o.root == c.root {
				return false
			}
		}
	} else {
		if b.claimed == nil {
			b.claimed = make(map[acker.RootID]struct{})
		}
		if len(b.claimed) == 0 {
			for _, o := range b.claims {
				b.claimed[o.root] = struct{}{}
			}
		}
		if _, ok := b.claimed[c.root]; ok {
			return false
		}
		b.claimed[c.root] = struct{}{}
	}
	b.claims = append(b.claims, c)
	return true
}

// Ack implements operation.Emitter.
func (b *boltInstance) Ack(a operation.Anchor) {
	if a.Checkpointed() {
		b.forget(a)
		return
	}
	if h := b.take(a); h != nil {
		b.ackHeld(h)
		b.recycle(h)
	}
}

func (b *boltInstance) ackHeld(h *held) {
	i := 0
	h.env.each(func(an anchor) {
		b.acks.update(an.root, an.edge^h.xors[i])
		i++
	})
}

// Fail implements operation.Emitter. An error wrapping
// operation.ErrRejected dead-letters and acknowledges the input, as when
// Process returns it.
func (b *boltInstance) Fail(a operation.Anchor, err error) {
	if a.Checkpointed() {
		// The input's effect is in the state: there is nothing left to
		// fail, only an error to count.
		b.stats.Errors.Add(1)
		b.topo.cfg.Logger.Warn("operation failed a checkpointed input", "component", b.name, "instance", b.index, "err", err)
		b.forget(a)
		return
	}
	h := b.take(a)
	switch {
	case h == nil:
	case errors.Is(err, operation.ErrRejected):
		b.deadLetterRejected(&h.env, err)
		b.ackHeld(h)
	default:
		b.failInput(context.Background(), &h.env, err)
	}
	if h != nil {
		b.recycle(h)
	}
}

func (b *boltInstance) take(a operation.Anchor) *held {
	h := b.heldInputs[a]
	delete(b.heldInputs, a)
	if h != nil && h == b.curHeld {
		b.curHeld, b.curDone = nil, true
	}
	return h
}

func (b *boltInstance) failHeld(err error) {
	for a := range b.heldInputs {
		b.Fail(a, err)
	}
}

func (b *boltInstance) flushAcks() {
	if b.acks.empty() {
		return
	}
	if b.topo.acks != nil {
		b.topo.acks.apply(&b.acks, &b.finished)
	}
	b.acks.reset()
}

// derive returns the sequence number of the next particle derived from
// parent, the k-th, and counts it. A derived particle's identity is thus a
// function of its parent's and of its place among the parent's children,
// not of when or where it was made: an instance that derives it again, in
// this process after a replay or in another after the unit moved there,
// gives it the same identity, and receivers that drop copies by identity
// drop it. A particle emitted anchored to several inputs (a window's
// result) is derived from the newest of them. Particles made without a
// parent (on a timer or a watermark, with no anchor held) are numbered in
// turn from Config.Incarnation<<32.
func derive(parent *particle.Particle, k *uint32) uint64 {
	return deriveFrom(parent.Origin, parent.Seq, k)
}

// deriveFrom is derive for a parent known by its identity.
func deriveFrom(origin uint32, seq uint64, k *uint32) uint64 {
	x := mix64(mix64(uint64(origin)<<32|uint64(*k)) ^ seq)
	*k++
	// The top bit marks meta particles' numbers.
	return x &^ metaSeqBit
}

// mix64 is splitmix64's finalizer, a bijection that spreads every bit of x
// over the result.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
