package topology

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/sensorstorm/sensorstorm/acker"
)

// ackOp is one update of a tree from a bolt instance: the XOR of the
// input's edge and the edges of the children anchored to it. It is 16
// bytes: every input processed appends one.
type ackOp struct {
	root acker.RootID
	xor  uint64
}

// failOp fails a tree. at is the number of updates that came before it, so
// that failures and updates apply in the order they were made.
type failOp struct {
	at     int
	root   acker.RootID
	reason acker.Reason
	err    error
}

// ackOps is a batch of updates and failures that an instance gathers and
// the ack service applies under one lock. Failures are rare and large,
// updates many and small: they are kept apart.
type ackOps struct {
	updates []ackOp
	fails   []failOp
}

// update adds an update of root by xor.
func (o *ackOps) update(root acker.RootID, xor uint64) {
	o.updates = append(o.updates, ackOp{root: root, xor: xor})
}

// fail adds the failure of root, after the updates so far.
func (o *ackOps) fail(root acker.RootID, reason acker.Reason, err error) {
	o.fails = append(o.fails, failOp{at: len(o.updates), root: root, reason: reason, err: err})
}

// append adds the updates and failures of p after those of o.
func (o *ackOps) append(p *ackOps) {
	for _, f := range p.fails {
		f.at += len(o.updates)
		o.fails = append(o.fails, f)
	}
	o.updates = append(o.updates, p.updates...)
}

func (o *ackOps) empty() bool { return len(o.updates) == 0 && len(o.fails) == 0 }

// reset empties o, keeping its memory.
func (o *ackOps) reset() {
	o.updates = o.updates[:0]
	if len(o.fails) > 0 {
		clear(o.fails)
		o.fails = o.fails[:0]
	}
}

// tree is what the engine keeps per pending tree besides the acker's
// slot: 16 bytes, no pointer. The particle stays with its source, which
// gives it back (Acknowledger.Redeliver) for a retry or a dead letter.
type tree struct {
	msgID   uint64
	origin  uint32 // the source instance, run.sources[origin-1], or a feed after them
	attempt uint32
}

// outcome is a failed tree, or a done one of an edge.Feed, reported outside
// the lock.
type outcome struct {
	tree
	done   bool
	reason acker.Reason
	err    error
}

// finished is an instance's scratch space for the trees that a start or
// an apply finished, reported outside the lock. The trees done, one per
// particle in the common case, are kept apart in 16 bytes each: the lock
// is held while they are gathered.
type finished struct {
	done   []tree
	failed []outcome
}

func (f *finished) reset() {
	f.done = f.done[:0]
	if len(f.failed) > 0 {
		clear(f.failed)
		f.failed = f.failed[:0]
	}
}

// ackService owns the acker table. Bolts apply their updates in batches
// directly under its lock, so acks never wait behind data in a queue.
type ackService struct {
	cfg     AckingConfig
	sources []*sourceInstance // by origin-1
	// outcomes are the sources' queues of finished trees, by origin-1.
	outcomes []*outcomes
	feeds    []*feed // by origin-1-len(sources)
	mu       sync.Mutex
	table    *acker.Table
	trees    treePages // by root slot
	stale    atomic.Uint64
	// now is a coarse wall clock, set at every housekeeping tick, for
	// scheduling retries.
	now  atomic.Int64
	wall func() int64
	// paused is the time so far that bolt instances had work waiting.
	// Trees are stamped and timed out on the work clock, the wall clock
	// less that time, read once per batch of updates: time spent queued
	// under backpressure counts towards neither timeout.
	paused atomic.Int64
}

// treePages is the acker's side table, by root slot: pages of trees that
// are added as the acker's slots grow with what is pending, never with the
// capacity, and never copied.
type treePages [][]tree

const treePage = 4096

// at returns the tree of slot, adding the pages up to it.
func (p *treePages) at(slot int) *tree {
	i := int(slot / treePage)
	for len(*p) <= i {
		*p = append(*p, make([]tree, treePage))
	}
	return &(*p)[i][slot%treePage]
}

// workNow returns the work clock. paused is read before the wall clock: a
// stale paused gives a later time, which only makes a tree look younger,
// whereas one stored after the wall clock was read would make it older by
// the pause in between, and the tree could time out while it waits.
func (a *ackService) workNow() int64 {
	paused := a.paused.Load()
	return a.wall() - paused
}

func newAckService(cfg AckingConfig, sources []*sourceInstance, feeds []*feed, capacity int, wall func() int64) (*ackService, error) {
	t, err := acker.NewTable(cfg.table(capacity))
	if err != nil {
		return nil, err
	}
	a := &ackService{cfg: cfg, sources: sources, feeds: feeds, table: t, wall: wall}
	for range sources {
		a.outcomes = append(a.outcomes, newOutcomes())
	}
	a.now.Store(wall())
	return a, nil
}

// newTree is a tree a source routed the first copies of: xor is the XOR
// of their edges.
type newTree struct {
	tree
	xor uint64
}

// startAll opens the trees of ts under one lock and appends their roots to
// roots, in order. A tree without copies is done at once and reported;
// its root is zero. fin is the caller's scratch space. The callers hold a
// pending token per tree.
func (a *ackService) startAll(ts []newTree, roots []acker.RootID, fin *finished) []acker.RootID {
	now := a.workNow()
	a.mu.Lock()
	for i := range ts {
		t := &ts[i]
		root, done, err := a.table.Init(now, t.xor)
		switch {
		case err != nil:
			// Capacity is the sum of every source's pending tokens, so a
			// full table is a broken invariant, not a load condition.
			panic("topology: acker table full despite pending tokens: " + err.Error())
		case done:
			fin.done = append(fin.done, t.tree)
		default:
			*a.trees.at(root.Slot()) = t.tree
		}
		roots = append(roots, root)
	}
	a.mu.Unlock()
	a.report(fin)
	return roots
}

// apply performs updates and failures, in the order they were added, and
// reports finished trees. fin is the caller's scratch space.
func (a *ackService) apply(ops *ackOps, fin *finished) {
	if ops.empty() {
		return
	}
	now := a.workNow()
	var stale uint64
	a.mu.Lock()
	u := 0
	for i := range ops.fails {
		f := &ops.fails[i]
		stale += a.updateLocked(fin, now, ops.updates[u:f.at])
		u = f.at
		if a.table.Fail(f.root) {
			a.finishLocked(fin, f.root, false, f.reason, f.err)
		} else {
			stale++
		}
	}
	stale += a.updateLocked(fin, now, ops.updates[u:])
	a.mu.Unlock()
	if stale > 0 {
		a.stale.Add(stale)
	}
	a.report(fin)
}

// updateLocked applies updates, adding the trees they complete to fin,
// and returns the number of stale ones. a.mu is held.
func (a *ackService) updateLocked(fin *finished, now int64, updates []ackOp) (stale uint64) {
	for _, op := range updates {
		done, ok := a.table.Update(now, op.root, op.xor)
		switch {
		case !ok:
			stale++
		case done:
			fin.done = append(fin.done, *a.trees.at(op.root.Slot()))
		}
	}
	return stale
}

// expire fails trees that timed out. paused is the total time the topology
// had work waiting (it never decreases): trees waiting in queues do not
// time out for it, by either timeout.
func (a *ackService) expire(now int64, paused time.Duration) {
	a.now.Store(now)
	a.paused.Store(int64(paused))
	work := now - int64(paused)
	var fin finished
	a.mu.Lock()
	a.table.Expire(work, work, func(root acker.RootID, r acker.Reason) {
		a.finishLocked(&fin, root, false, r, nil)
	})
	a.mu.Unlock()
	a.report(&fin)
}

// finishLocked adds the tree of root, which the table finished, to fin.
// a.mu is held. The side entry stays as it is until a tree starts in the
// slot again.
func (a *ackService) finishLocked(fin *finished, root acker.RootID, done bool, r acker.Reason, err error) {
	t := a.trees.at(root.Slot())
	if done {
		fin.done = append(fin.done, *t)
		return
	}
	fin.failed = append(fin.failed, outcome{tree: *t, reason: r, err: err})
}

// report tells sources and feeds about finished trees, outside the lock,
// and empties fin. Sources learn through their queues of outcomes: their
// callbacks run on their own goroutines, for report runs on a bolt's, or
// on a source's with its lock held.
func (a *ackService) report(fin *finished) {
	// Trees that finished together mostly come from one source: its
	// counter and tokens are updated once per run of them.
	for done := fin.done; len(done) > 0; {
		origin := done[0].origin
		n := 1
		for n < len(done) && done[n].origin == origin {
			n++
		}
		if s, f := a.origin(origin); s != nil {
			a.outcomes[origin-1].ack(done[:n])
			s.stats.Acked.Add(uint64(n))
		} else {
			for _, t := range done[:n] {
				f.finish(&outcome{tree: t, done: true})
			}
		}
		done = done[n:]
	}
	for i := range fin.failed {
		o := &fin.failed[i]
		s, f := a.origin(o.origin)
		switch {
		case f != nil:
			f.finish(o)
		case int(o.attempt) < a.cfg.MaxAttempts:
			s.stats.Failed.Add(1)
			s.stats.FailedBy[o.reason].Add(1)
			s.retries.push(retry{msgID: o.msgID, attempt: o.attempt + 1, due: a.now.Load() + int64(a.backoff(int(o.attempt)))})
		default:
			s.stats.Failed.Add(1)
			s.stats.FailedBy[o.reason].Add(1)
			a.outcomes[o.origin-1].fail(o.msgID, o.reason, o.err)
		}
	}
	fin.reset()
}

// origin returns the source instance or the feed that trees of origin
// come from.
func (a *ackService) origin(origin uint32) (*sourceInstance, *feed) {
	i := int(origin) - 1
	if i < len(a.sources) {
		return a.sources[i], nil
	}
	return nil, a.feeds[i-len(a.sources)]
}

// giveUp dead-letters the particle of a tree that failed for good, as its
// source gives it back, and tells the source. It runs on a goroutine of
// the source instance's, holding no lock.
func (a *ackService) giveUp(s *sourceInstance, msgID uint64, r acker.Reason, err error) {
	dl := DeadLetter{Component: s.name, Instance: s.index, Reason: r.String(), Err: err}
	if p, rerr := s.ackr.Redeliver(msgID); rerr == nil {
		dl.Particle = &p
	} else {
		dl.Err = errors.Join(err, fmt.Errorf("topology: redeliver %d for the dead-letter sink: %w", msgID, rerr))
	}
	s.stats.DeadLettered.Add(1)
	s.topo.deadLetter(dl)
	s.ackr.Fail(msgID, r, err)
	s.pending.give(1)
}

// backoff is the wait before attempt+1, exponential with jitter.
func (a *ackService) backoff(attempt int) time.Duration {
	b := backoff.ExponentialBackOff{
		InitialInterval:     a.cfg.RetryInitialInterval,
		RandomizationFactor: backoff.DefaultRandomizationFactor,
		Multiplier:          backoff.DefaultMultiplier,
		MaxInterval:         a.cfg.RetryMaxInterval,
	}
	b.Reset()
	var d time.Duration
	for range attempt {
		d = b.NextBackOff()
	}
	return d
}

// retry is a failed tree waiting for its particle to be emitted again.
type retry struct {
	msgID   uint64
	attempt uint32
	due     int64
}

// retryQueue holds a source instance's retries. It is safe for concurrent
// use: the acker pushes, the source's housekeeping pops.
type retryQueue struct {
	mu    sync.Mutex
	items []retry
}

func (q *retryQueue) push(r retry) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, r)
}

// due removes and returns the retries due at now.
func (q *retryQueue) due(now int64) []retry {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []retry
	keep := q.items[:0]
	for _, r := range q.items {
		if r.due <= now {
			out = append(out, r)
		} else {
			keep = append(keep, r)
		}
	}
	clear(q.items[len(keep):])
	q.items = keep
	return out
}

// housekeep flushes batches that lingered and replays due retries until
// ctx ends. With acking, a second goroutine, which it waits for, delivers
// the outcomes of the instance's trees.
func (s *sourceInstance) housekeep(ctx context.Context, ticks <-chan time.Time) {
	if s.topo.acks != nil {
		var wg sync.WaitGroup
		defer wg.Wait()
		q := s.topo.acks.outcomes[s.origin-1]
		wg.Go(func() { s.deliverOutcomes(ctx, q) })
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			s.tick()
		}
	}
}

func (s *sourceInstance) tick() {
	s.moveHorizon()
	s.barrierNow()
	if s.topo.acks != nil {
		for _, r := range s.retries.due(s.topo.acks.now.Load()) {
			s.retry(r)
		}
	}
	s.mu.Lock()
	// A batch not delivered, as the source stops, stays pending: finish
	// flushes it.
	s.router.handOn(s.ctx, false)
	s.mu.Unlock()
}

// drainPending waits until every tree of this instance has finished,
// replaying failed ones meanwhile.
func (s *sourceInstance) drainPending(ctx context.Context) error {
	ticks, stop := s.topo.cfg.Wall.NewTicker(s.topo.cfg.HousekeepingInterval)
	defer stop()
	for s.pending.outstanding() > 0 {
		if s.topo.ckpt != nil {
			// Held inputs wait for a checkpoint to finish their trees.
			s.topo.ckpt.request()
		}
		for _, r := range s.retries.due(s.topo.acks.now.Load()) {
			s.retry(r)
		}
		s.mu.Lock()
		err := s.router.flush(ctx, false)
		s.mu.Unlock()
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticks:
		}
	}
	return nil
}
