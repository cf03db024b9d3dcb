package topology

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// Source produces particles. Run emits until the input is exhausted (it
// returns nil) or ctx is cancelled (it returns promptly, with nil or
// ctx.Err()). Any other error stops the topology. A Source that is an
// io.Closer is closed by the topology's Run once the run drained and its
// last callback returned: what it keeps open for acknowledgements may
// outlive its own Run until then.
type Source interface {
	Run(ctx context.Context, out SourceEmitter) error
}

// SourceFunc adapts a function to a Source.
type SourceFunc func(ctx context.Context, out SourceEmitter) error

// Run calls f.
func (f SourceFunc) Run(ctx context.Context, out SourceEmitter) error { return f(ctx, out) }

// SourceFactory makes the source of one instance.
type SourceFactory func(instance int) Source

// Single returns a SourceFactory for a source with one instance.
func Single(s Source) SourceFactory { return func(int) Source { return s } }

// Acknowledger is implemented by sources that emit tracked particles
// ([SourceEmitter.EmitTracked]). Like a Storm spout, such a source keeps
// what it needs to produce a particle again until it learns its fate: the
// engine keeps no copy, only 16 bytes per pending tree besides the acker's
// 16, and asks for the particle with Redeliver when it retries a failed
// tree or sends it to the dead-letter sink.
//
// The methods are called concurrently with Run and with each other, never
// under an engine lock, so they may call back into the SourceEmitter. Ack
// or Fail is called once per message id: Ack when the particle's tree was
// fully processed (or, with acking off, in EmitTracked once the particle
// was accepted), Fail when it failed for good after the retry policy gave
// up. Redeliver is called only before that, any number of times. With
// acking, Ack and Fail run on a goroutine of the source instance's own: a
// slow one delays only its source, whose trees keep their pending tokens
// until the callbacks returned (EmitTracked called from one may wait for
// a token only its return frees).
type Acknowledger interface {
	Ack(msgID uint64)
	Fail(msgID uint64, reason acker.Reason, err error)
	// Redeliver returns the particle emitted with msgID, to emit it again.
	// An error fails the tree for good, with that error.
	Redeliver(msgID uint64) (particle.Particle, error)
}

// BatchAcknowledger is an Acknowledger that takes the acknowledgements of
// trees that finished together in one call, so that what it does per
// acknowledgement under a lock (finding the input, completing it) it does
// under one lock per batch. With acking, the engine calls AckBatch
// instead of Ack, on the source instance's own goroutine, so calls to it
// never overlap (an implementation may keep scratch space for it);
// msgIDs is the engine's, reused once AckBatch returns.
type BatchAcknowledger interface {
	Acknowledger
	// AckBatch is Ack of each of msgIDs, in order.
	AckBatch(msgIDs []uint64)
}

// SourceEmitter is what a source emits into. Its methods are safe for
// concurrent use.
type SourceEmitter interface {
	// Emit sends a data particle downstream, untracked. It blocks while
	// downstream is full; it returns a non-nil error only when p was not
	// accepted because ctx was cancelled or the topology is stopping.
	Emit(p particle.Particle) error
	// EmitTracked sends a data particle downstream, tracked under msgID
	// (the source's own number): the source, which must be an
	// [Acknowledger], learns when it was processed, and a failure is
	// retried by the engine. It blocks like Emit, and also while the
	// source has too many particles pending. It returns an error wrapping
	// [ErrNotAcknowledger] when the source is not one.
	EmitTracked(p particle.Particle, msgID uint64) error
	// EmitMeta sends a meta particle to every instance downstream.
	EmitMeta(t int64, m particle.Meta) error
	// Reject reports bad input: it is counted and sent to the dead-letter
	// sink with raw; nothing is emitted.
	Reject(err error, raw []byte)
	// Flush hands partly filled batches downstream now, for sources that
	// go quiet; the engine also does it after a short linger.
	Flush() error
	// Skip accounts n data particles as emitted without emitting them. A
	// source that resumes a replay past particles emitted before, in this
	// process or another, skips them so that the particles after keep the
	// identities they had: receivers then drop the copies of those
	// emitted twice. A live source that another process ran before skips
	// past the numbers that process may have used, so that receivers do
	// not drop its new particles as copies.
	Skip(n uint64)
}

// Skip implements SourceEmitter.
func (s *sourceInstance) Skip(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq += n
}

// metaSeqBit marks the sequence numbers of meta particles.
const metaSeqBit = 1 << 63

// sourceInstance runs one instance of a source.
type sourceInstance struct {
	name    string
	index   int
	origin  uint32
	src     Source
	ackr    Acknowledger // nil when the source does not want acks
	topo    *run
	stats   *ComponentStats
	pending *tokens // one per tracked particle not yet finished; nil without acking
	retries retryQueue
	edges   *acker.EdgeIDs
	// bound is the future bound in ns, negative when off; horizon the
	// newest event time accepted, moved with the stream clock by the
	// instance's housekeeping and before a rejection (a clock read per
	// particle would cost more than it is worth).
	bound   int64
	horizon atomic.Int64

	// ctx is the source's context: cancelled when the topology stops.
	ctx context.Context

	mu      sync.Mutex // guards what follows: Emit may be called concurrently
	seq     uint64
	metaSeq uint64
	router  router
	env     envelope // the one being routed; a field so that routing does not allocate
	// credit is the pending tokens taken ahead (see takeToken), given
	// back when the source's Run has returned.
	credit int

	// unstarted are the trees whose copies wait in undelivered batches
	// under provisional roots (see provisional); they start, under one
	// lock, before any of their copies is delivered.
	unstarted []newTree
	roots     []acker.RootID // scratch for starting them
	finished  finished

	// emitted counts the data particles Run emitted, skip those still to
	// drop after a restore (see resume), while skipping is set; eos is
	// set once the instance ended its stream.
	emitted, skip uint64
	eos           bool
	skipping      atomic.Bool
	// wantBarrier is the checkpoint the coordinator asked for;
	// lastBarrier the last one whose barrier the instance emitted.
	wantBarrier, lastBarrier atomic.Uint64
}

var _ SourceEmitter = (*sourceInstance)(nil)

func (s *sourceInstance) run() error {
	ctx := s.ctx
	err := s.src.Run(ctx, s)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("source %s[%d]: %w", s.name, s.index, err)
	}
	return err
}

// Emit implements SourceEmitter.
func (s *sourceInstance) Emit(p particle.Particle) error {
	return s.emit(p, 0, false)
}

// EmitTracked implements SourceEmitter.
func (s *sourceInstance) EmitTracked(p particle.Particle, msgID uint64) error {
	if s.ackr == nil {
		return fmt.Errorf("%w: source %s[%d] is a %T", ErrNotAcknowledger, s.name, s.index, s.src)
	}
	return s.emit(p, msgID, true)
}

func (s *sourceInstance) emit(p particle.Particle, msgID uint64, track bool) (err error) {
	if p.Meta != nil {
		return fmt.Errorf("topology: Emit of a meta particle (%s): use EmitMeta", p.Meta.MetaType())
	}
	if s.skipping.Load() && s.skipOne(&p, msgID, track) {
		return nil
	}
	if p.Time > s.horizon.Load() {
		// The horizon may lag the clock: look again before rejecting.
		if s.moveHorizon(); p.Time > s.horizon.Load() {
			s.rejectWild(p, msgID, track)
			s.mu.Lock()
			s.emitted++ // taken from the source all the same
			s.mu.Unlock()
			return nil
		}
	}
	tracked := track && s.pending != nil
	if track && !tracked {
		// Without acking a particle is acknowledged once accepted, after
		// s.mu is released: Ack may emit.
		defer func() {
			if err == nil {
				s.ackr.Ack(msgID)
			}
		}()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tracked {
		if err := s.takeToken(p.Time); err != nil {
			return err
		}
	}
	if err := s.router.flushFull(s.ctx); err != nil {
		if tracked {
			s.credit++
		}
		return err
	}
	if tracked {
		s.emitTracked(p, msgID, 1)
	} else {
		s.emitUntracked(p)
	}
	s.stats.Out.Add(1)
	s.emitted++
	if s.topo.ckpt != nil {
		s.barrierLocked()
	}
	// p is accepted: a batch that cannot be handed on now because ctx is
	// over is delivered when the source finishes.
	s.router.handOn(s.ctx, true)
	return nil
}

// tokenCredit is how many pending tokens a source instance takes at once
// when they are free. Tokens are shared with the goroutines that give them
// back: one atomic operation per particle on their cache line cost as much
// as the rest of starting a tree.
const tokenCredit = 64

// takeToken takes a pending token for a tracked particle of event time t
// from the instance's credit, refilling it with the tokens free, up to
// tokenCredit. When none is free it waits, with s.mu released meanwhile,
// flushing what this source holds before it blocks, and again before it
// waits if others emitted meanwhile: those particles may be the ones whose
// completion frees a token. The flush already carries t as the high-water
// mark: a sync buffer holds the particles at its input's newest time until
// a later one comes, so a source at its limit would otherwise wait for the
// very trees that the particle it holds back would release. s.mu is held.
func (s *sourceInstance) takeToken(t int64) error {
	if s.credit == 0 {
		s.credit = s.pending.tryTakeUpTo(tokenCredit)
	}
	if s.credit == 0 {
		if s.topo.ckpt != nil {
			// Held inputs wait for a checkpoint to finish their trees.
			s.topo.ckpt.request()
		}
		s.router.expect("", t)
		if err := s.router.flush(s.ctx, false); err != nil {
			return err
		}
		s.mu.Unlock()
		err := s.pending.take(s.ctx, s.Flush)
		s.mu.Lock()
		if err != nil {
			return err
		}
		s.credit++
	}
	s.credit--
	return nil
}

// returnCredit gives back the tokens taken ahead and not used.
func (s *sourceInstance) returnCredit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.credit > 0 {
		s.pending.give(s.credit)
		s.credit = 0
	}
}

// stamp gives p this instance's identity. s.mu is held.
func (s *sourceInstance) stamp(p *particle.Particle) {
	s.seq++
	p.Origin, p.Seq = s.origin, s.seq
}

func (s *sourceInstance) emitUntracked(p particle.Particle) {
	s.stamp(&p)
	s.env = envelope{p: p}
	s.router.route("", &s.env, nil)
}

// emitTracked routes p under a provisional root, which startTrees
// replaces before a copy is delivered. s.mu is held and a pending token
// was taken.
func (s *sourceInstance) emitTracked(p particle.Particle, msgID uint64, attempt uint32) {
	s.stamp(&p)
	k := len(s.unstarted)
	s.env = envelope{p: p, first: anchor{root: provisional(k)}, tracked: true, replay: attempt > 1}
	xor := s.router.route("", &s.env, s.edges)
	s.unstarted = append(s.unstarted, newTree{tree: tree{msgID: msgID, origin: s.origin, attempt: attempt}, xor: xor})
}

// provisional is the root of the k-th unstarted tree. Its generation is
// zero, which no pending tree has.
func provisional(k int) acker.RootID { return acker.RootID(k) }

// beforeDeliver runs before the router hands batches on: the trees of
// their particles start, and the run's position moves to what they hold.
func (s *sourceInstance) beforeDeliver() {
	if s.topo.acks != nil {
		s.startTrees()
	}
	s.topo.advance(s.router.high())
}

// startTrees starts the unstarted trees and gives their copies the real
// roots. The router calls it before it delivers a batch.
func (s *sourceInstance) startTrees() {
	if len(s.unstarted) == 0 {
		return
	}
	s.roots = s.topo.acks.startAll(s.unstarted, s.roots[:0], &s.finished)
	s.router.resolve(s.roots)
	clear(s.unstarted)
	s.unstarted = s.unstarted[:0]
}

// EmitMeta implements SourceEmitter.
func (s *sourceInstance) EmitMeta(t int64, m particle.Meta) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.router.flushFull(s.ctx); err != nil {
		return err
	}
	// Meta particles are numbered apart from data, so that a control
	// action (a speed change) never renumbers the data: a particle's
	// number picks its instance under shuffle grouping.
	s.metaSeq++
	p := particle.Particle{Time: t, Meta: m, Origin: s.origin, Seq: metaSeqBit | s.metaSeq}
	s.env = envelope{p: p}
	s.router.route("", &s.env, nil)
	s.router.handOn(s.ctx, true)
	return nil
}

// moveHorizon moves the newest event time accepted with the stream clock.
func (s *sourceInstance) moveHorizon() {
	h := int64(math.MaxInt64)
	if s.bound >= 0 {
		if now := s.topo.clock.Now(); now < math.MaxInt64-s.bound {
			h = now + s.bound
		}
	}
	s.horizon.Store(h)
}

// rejectWild counts and dead-letters a particle beyond the future bound,
// and acknowledges it: it is bad input, not a failure.
func (s *sourceInstance) rejectWild(p particle.Particle, msgID uint64, tracked bool) {
	s.stats.Invalid.Add(1)
	err := fmt.Errorf("%w: %s at %d, bound %d", ErrFutureTimestamp, p.EventTime(), p.Time, s.horizon.Load())
	s.topo.deadLetter(DeadLetter{Component: s.name, Instance: s.index, Reason: "invalid", Err: err, Particle: &p})
	if tracked {
		s.ackr.Ack(msgID)
	}
}

// Reject implements SourceEmitter.
func (s *sourceInstance) Reject(err error, raw []byte) {
	s.stats.Invalid.Add(1)
	s.topo.deadLetter(DeadLetter{Component: s.name, Instance: s.index, Reason: "invalid", Err: err, Raw: raw})
}

// Flush implements SourceEmitter.
func (s *sourceInstance) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.router.flush(s.ctx, false)
}

// retry emits a failed particle again, as the source gives it back.
func (s *sourceInstance) retry(r retry) {
	p, err := s.ackr.Redeliver(r.msgID)
	if err != nil {
		s.topo.acks.giveUp(s, r.msgID, acker.Failed, fmt.Errorf("topology: redeliver %d: %w", r.msgID, err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Retried.Add(1)
	s.emitTracked(p, r.msgID, r.attempt)
	// The source's own context may be over: a replay must still reach the
	// bolts, which drain until the end.
	s.router.handOn(s.topo.drainCtx, true)
}

// finish delivers what is left and announces the end of this instance's
// stream. It waits for pending trees first, replaying failures, so that
// nothing the source emitted is lost. A transport that refuses (its
// worker fenced off: an error wrapping edge.ErrReleased) leaves the end
// to the copies of the source on the other workers, which announce it
// once they find the source done.
func (s *sourceInstance) finish(ctx context.Context) (err error) {
	defer func() {
		if errors.Is(err, edge.ErrReleased) {
			s.topo.cfg.Logger.Warn("source's end of stream refused: left to the other workers", "component", s.name, "instance", s.index, "err", err)
			err = nil
		}
	}()
	s.mu.Lock()
	err = s.router.flush(ctx, false)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if s.pending != nil {
		s.returnCredit()
		// Downstream buffers flush on drained, so the last trees can
		// complete; failed ones are replayed meanwhile.
		s.mu.Lock()
		err := s.router.drain(ctx)
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if err := s.drainPending(ctx); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.router.endOfStream(ctx); err != nil {
		return err
	}
	s.ended()
	return nil
}
