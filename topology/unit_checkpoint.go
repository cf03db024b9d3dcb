package topology

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sensorstorm/sensorstorm/checkpoint"
	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// Unit checkpoints. With a Transport, the edges into an instance an Inlet
// feeds are a log the Inlet reads (a JetStream consumer), so a unit (the
// instance and those chained to it) needs no cut across the run: it
// checkpoints on its own, as a Kafka Streams task commits its state with
// its input offsets. Its checkpoint starts at its feed, between two
// batches, with a barrier on every input at once; it holds the unit's
// snapshots and the Inlet's position after the last batch before the
// barrier, and once it is complete the Inlet may let go of every batch
// before it. A unit restores its newest checkpoint wherever it starts
// holding (edge.Resumer.Acquire).

// units readies the unit checkpoints of r: every instance an Inlet feeds
// gets its partition of the store; those no Inlet feeds, directly or up
// their chain, take no checkpoints.
func (t *Topology) units(r *run) error {
	stores := t.cfg.Checkpoints.Store.(checkpoint.Partitioned)
	for _, b := range r.bolts {
		switch {
		case b.inlet != nil:
			res, ok := b.inlet.(edge.Resumer)
			if !ok {
				return fmt.Errorf("topology: bolt %s[%d]: checkpoints need an Inlet that resumes from a position (edge.Resumer), not %T", b.name, b.index, b.inlet)
			}
			store, err := stores.Partition(b.instanceName())
			if err != nil {
				return fmt.Errorf("topology: bolt %s[%d]: %w", b.name, b.index, err)
			}
			b.unitStore, b.feed.resumer = store, res
		case b.head == nil:
			b.ckpt, b.router.barriers = nil, false
		}
	}
	return nil
}

// startUnit makes the coordinator of the unit b heads and restores the
// unit's newest checkpoint, if any, into b and the instances chained to
// it, which have taken nothing; it tells the Inlet where to resume.
func (b *boltInstance) startUnit(ctx context.Context) error {
	f, r := b.feed, b.topo
	c := newCoordinator(r, r.cfg.Checkpoints, b.unitStore, nil, append([]*boltInstance{b}, b.chain...), f)
	b.unit = c
	var rr *restoredRun
	err := b.retryStore(ctx, "restoring the unit's checkpoint", func() (err error) {
		rr, err = c.loadCheckpoint(ctx)
		return err
	}, func(err error) bool {
		var ce *checkpoint.CorruptError
		return errors.Is(err, errStoreFailed) && !errors.As(err, &ce)
	})
	if err != nil {
		return fmt.Errorf("topology: unit %s: %w", b.instanceName(), err)
	}
	var pos []byte
	f.restored = nil
	if rr != nil {
		for _, m := range c.bolts {
			if err := m.restore(rr.snapshots[m.instanceName()]); err != nil {
				return fmt.Errorf("topology: unit %s: restore checkpoint %d: %s: %w", b.instanceName(), rr.id, m.instanceName(), err)
			}
		}
		pos = rr.positions[f.instanceName()].own
		c.next = rr.id + 1
		c.stats.Restored, c.stats.Last = rr.id, rr.id
		f.restored = b.ckpt.inBuffer
		r.cfg.Logger.Info("unit restored its checkpoint", "component", b.name, "instance", b.index, "id", rr.id)
	}
	f.deliverMu.Lock()
	f.position, f.ended, f.fresh, f.any = 0, false, false, false
	f.current.Store(false)
	f.deliverMu.Unlock()
	f.gaveUp.Store(false)
	f.setReleased(b.buf.Released())
	if err := f.resumer.Resume(pos); err != nil {
		return fmt.Errorf("topology: unit %s: resume: %w", b.instanceName(), err)
	}
	return nil
}

// endUnit takes the last checkpoint of a unit that ended its streams:
// its instances' final states, which hold the effect of every input, so
// that the Inlet lets go of everything.
func (b *boltInstance) endUnit(ctx context.Context) error {
	b.feed.deliverMu.Lock()
	b.feed.ended = true
	restoredEnded := !b.feed.any
	b.feed.deliverMu.Unlock()
	if restoredEnded {
		// It restored the final checkpoint of a unit that ended
		// elsewhere: nothing to add.
		return nil
	}
	err := b.retryStore(ctx, "the unit's last checkpoint", func() error { return b.unit.final(ctx) }, func(err error) bool {
		return !errors.Is(err, edge.ErrReleased)
	})
	if err != nil {
		return fmt.Errorf("topology: unit %s: %w", b.instanceName(), err)
	}
	return nil
}

// storeAttempts bounds the tries, a second apart, of what a unit reads from
// or writes to its store.
const storeAttempts = 30

// retryStore runs op until it succeeds, fails for good (retryable reports
// false), ctx ends or it failed storeAttempts times: a store that does not
// answer for a while (its servers electing leaders) is tried again, while
// the unit's messages wait.
func (b *boltInstance) retryStore(ctx context.Context, what string, op func() error, retryable func(error) bool) error {
	var err error
	for range storeAttempts {
		if err = op(); err == nil || ctx.Err() != nil || !retryable(err) {
			return err
		}
		b.topo.cfg.Logger.Warn(what+" failed: trying again", "component", b.name, "instance", b.index, "err", err)
		tick, stop := b.topo.cfg.Wall.NewTicker(time.Second)
		select {
		case <-tick:
		case <-ctx.Done():
		}
		stop()
	}
	return err
}

// errStale releases a unit whose first batch found a checkpoint newer than
// the one it restored: its last holder committed it after this one
// restored, while it still held the unit.
var errStale = fmt.Errorf("%w: a newer checkpoint was committed since the unit restored its own", edge.ErrReleased)

// checkCurrent checks, at the first batch of a unit's holding, that no
// checkpoint newer than the one it restored was committed since: the
// batch proves that the unit is this process's now, and its last holder
// let go of it, but that holder may have committed once more before.
// The unit then starts again and restores that one (errStale, an
// edge.ErrReleased).
func (f *feed) checkCurrent(ctx context.Context) error {
	c := f.b.unit
	if c == nil || f.current.Load() {
		return nil
	}
	var ids []uint64
	err := f.b.retryStore(ctx, "reading the unit's checkpoints", func() (err error) {
		ids, err = c.store.Checkpoints(ctx)
		return err
	}, func(error) bool { return true })
	if err != nil {
		return fmt.Errorf("topology: unit %s: %w", f.b.instanceName(), err)
	}
	c.mu.Lock()
	restored := c.stats.Restored
	c.mu.Unlock()
	if len(ids) > 0 && ids[0] > restored {
		return fmt.Errorf("topology: unit %s restored checkpoint %d, newest %d: %w", f.b.instanceName(), restored, ids[0], errStale)
	}
	f.current.Store(true)
	return nil
}

// givenUp reports whether the feed's Inlet gave the unit to another
// process.
func (f *feed) givenUp() bool { return f.gaveUp.Load() }

// takeFresh reports whether batches came since the last checkpoint began,
// and starts counting afresh.
func (f *feed) takeFresh() bool {
	f.deliverMu.Lock()
	defer f.deliverMu.Unlock()
	fresh := f.fresh
	f.fresh = false
	return fresh
}

// markFresh has the next checkpoint taken whether or not batches come.
func (f *feed) markFresh() {
	f.deliverMu.Lock()
	f.fresh = true
	f.deliverMu.Unlock()
}

// instanceName names the feed's position in its unit's checkpoints.
func (f *feed) instanceName() string { return fmt.Sprintf("inlet/%s/%d", f.b.name, f.b.index) }

// barrier starts checkpoint id of the feed's unit: between two batches,
// it hands the instance a barrier on every input, and returns the feed's
// share: the Inlet's position after the last batch delivered before it.
func (f *feed) barrier(id uint64) ckptReport {
	r := f.b.topo
	f.deliverMu.Lock()
	pos, err := f.resumer.Position(f.position)
	if pos == nil {
		pos = []byte{}
	}
	if !f.ended {
		ib := chanInbox{ch: f.b.inbox, backlog: &f.b.backlog, wall: r.wallNanos}
		for in := range f.b.inputs {
			bt := r.pool.get(in)
			bt.quiet = true
			bt.items = append(bt.items, envelope{p: particle.Particle{Meta: metaparticle.Barrier{Checkpoint: id}, Origin: f.origin, Seq: metaSeqBit | barrierSeqBit | id}})
			if err := ib.deliver(f.headCtx, bt); err != nil {
				r.pool.put(bt)
				break
			}
		}
	}
	f.deliverMu.Unlock()
	if err != nil {
		err = fmt.Errorf("position: %w", err)
	}
	return ckptReport{id: id, instance: f.instanceName(), source: &sourcePosition{own: pos}, err: err}
}

// flushEdges waits until what the unit's instances sent across processes
// before their shares is durable (edge.Flusher): the Inlet forgets the
// inputs before the cut once the checkpoint commits, as a Kafka Streams
// task flushes its producer before it commits its offsets. An instance
// hands on its barrier, and so everything before it, before it hands the
// coordinator its share.
func (c *coordinator) flushEdges(ctx context.Context) error {
	if c.feed == nil {
		return nil
	}
	seen := map[edge.Flusher]bool{}
	for _, b := range c.bolts {
		// The instance routes concurrently: only the targets' inboxes,
		// set once built, are read here.
		for oi := range b.router.outputs {
			targets := b.router.outputs[oi].targets
			for ti := range targets {
				ri, ok := targets[ti].inbox.(*remoteInbox)
				if !ok {
					continue
				}
				f, ok := ri.out.(edge.Flusher)
				if !ok || seen[f] {
					continue
				}
				seen[f] = true
				if err := f.Flush(ctx); err != nil {
					return fmt.Errorf("%s: output not durable: %w", b.instanceName(), err)
				}
			}
		}
	}
	return nil
}
