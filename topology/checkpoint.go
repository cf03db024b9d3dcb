package topology

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/sensorstorm/sensorstorm/checkpoint"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/state"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// DefaultCheckpointInterval is the wall time between checkpoints when
// CheckpointConfig.Interval is zero.
const DefaultCheckpointInterval = 5 * time.Second

// CheckpointConfig turns on checkpoints: consistent snapshots of every
// instance's state and every source's position, from which a run that
// stopped or was killed resumes (DESIGN.md, "Checkpoints and exactly-once
// output").
//
// With a Transport, every instance an Inlet feeds checkpoints as a unit of
// its own, with the instances chained to it: its checkpoints start at its
// Inlet, between two batches, record the Inlet's position (edge.Resumer),
// and go to the unit's partition of the Store. A unit restores its newest
// checkpoint whenever it starts, on this process or another; the sources
// and the instances no Inlet feeds take none.
type CheckpointConfig struct {
	// Store keeps the checkpoints; nil turns checkpoints off. A run
	// restores the newest complete checkpoint it finds there. With a
	// Transport, it must be a checkpoint.Partitioned.
	Store checkpoint.Store `yaml:"-"`
	// Interval is the wall time between two checkpoints. A checkpoint
	// also starts early when a source waits for pending trees, and when
	// Run's context ends. Defaults to DefaultCheckpointInterval.
	Interval time.Duration `yaml:"interval"`
}

// Positioner is implemented by sources that resume from a position of
// their own rather than from their start: a live source whose input is
// kept by a log (the MQTT spool). A source without it is run again from
// its start at a restore, and the engine drops the particles the
// checkpoint covers, which suits deterministic sources such as
// recordings.
type Positioner interface {
	// Position returns the source's position after its first emitted
	// data particles of this run (Emit and EmitTracked calls accepted,
	// counted from the position it resumed from). It is called between
	// two emits, with the source's emitter locked.
	Position(emitted uint64) ([]byte, error)
	// Committed tells that a checkpoint holding position is complete:
	// what came before it is never asked for again. It is called from
	// the engine's goroutine, outside any lock.
	Committed(position []byte)
	// Resume is called before Run with the position of the checkpoint
	// restored.
	Resume(position []byte) error
}

// Wrapper is implemented by sources that wrap another, such as one that
// watches what the other emits: the engine looks through it for the
// optional interfaces that do not involve emitting (Positioner).
type Wrapper interface {
	Unwrap() Source
}

// positionerOf returns the Positioner of src, looking through wrappers.
func positionerOf(src Source) (Positioner, bool) {
	for src != nil {
		if p, ok := src.(Positioner); ok {
			return p, true
		}
		w, ok := src.(Wrapper)
		if !ok {
			return nil, false
		}
		src = w.Unwrap()
	}
	return nil, false
}

// CheckpointStats describes the checkpoints of a running topology.
type CheckpointStats struct {
	// Enabled tells whether the run takes checkpoints.
	Enabled bool
	// Last is the id of the newest complete checkpoint, 0 if none;
	// Restored the one this run started from, 0 if none.
	Last, Restored uint64
	// LastAt is when Last completed; Duration how long it took from its
	// start; Bytes the size of its snapshots.
	LastAt   time.Time
	Duration time.Duration
	Bytes    int64
	// Completed and Failed count this run's checkpoints.
	Completed, Failed uint64
}

// Checkpoints returns the figures of the running topology's checkpoints.
func (t *Topology) Checkpoints() CheckpointStats {
	r := t.current.Load()
	if r == nil || r.ckpt == nil {
		return CheckpointStats{}
	}
	c := r.ckpt
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Enabled = true
	return s
}

// ckptReport is what one instance contributes to a checkpoint: a bolt
// instance's snapshot and the acknowledgements it deferred to the
// checkpoint, or a source instance's position. committer is the
// operation that took the snapshot, if it waits for the commit.
type ckptReport struct {
	id        uint64
	instance  string
	snapshot  []byte
	acks      ackOps
	source    *sourcePosition
	err       error
	committer operation.Committer
}

// sourcePosition is where a source instance was at a checkpoint.
type sourcePosition struct {
	// seq is the instance's data sequence number, emitted the count of
	// data particles its Run emitted (skipped ones included): a restored
	// run skips that many and numbers the rest from seq.
	seq, emitted uint64
	// own is a Positioner's position.
	own []byte
	src *sourceInstance
}

// coordinator takes a run's checkpoints: it starts checkpoint N at the
// sources, collects every instance's share, stores them and completes N.
type coordinator struct {
	r        *run
	store    checkpoint.Store
	interval time.Duration
	// sources and bolts are the instances whose shares a checkpoint
	// needs: the run's, or a unit's bolt instances (its head and those
	// chained to it), whose feed starts its checkpoints and holds its
	// position.
	sources []*sourceInstance
	bolts   []*boltInstance
	feed    *feed
	reports chan ckptReport
	wake    chan struct{}
	// participants counts the instances whose share a checkpoint needs.
	participants int
	// restored is the checkpoint the run started from, if any.
	restored *restoredRun

	mu    sync.Mutex
	stats CheckpointStats
	// ended are the instances that ended their streams: they owe no
	// share, their final one (kept in ends) stands for them.
	ended map[string]ckptReport

	// endCh wakes a checkpoint waiting for shares when an instance ends.
	endCh chan struct{}
	// next is the id of the next checkpoint.
	next uint64
	// taken is closed, and replaced, whenever a checkpoint completes or
	// fails; lastFailed is the id of the last that failed.
	taken      chan struct{}
	lastFailed uint64
	failure    error // why lastFailed failed
	// finalWanted tells that a final checkpoint was asked for: it is
	// taken even if nothing came since the last.
	finalWanted bool
	// held are the acknowledgements of checkpoints that failed: the next
	// one to complete covers them.
	held ackOps
}

func newCoordinator(r *run, cfg CheckpointConfig, store checkpoint.Store, sources []*sourceInstance, bolts []*boltInstance, f *feed) *coordinator {
	interval := cfg.Interval
	if interval <= 0 {
		interval = DefaultCheckpointInterval
	}
	participants := len(sources) + len(bolts)
	if f != nil {
		participants++
	}
	return &coordinator{
		r: r, store: store, interval: interval, participants: participants, sources: sources, bolts: bolts, feed: f,
		reports: make(chan ckptReport, participants), wake: make(chan struct{}, 1),
		ended: map[string]ckptReport{}, endCh: make(chan struct{}, 1), next: 1,
		taken: make(chan struct{}),
	}
}

// request asks for a checkpoint as soon as none is in progress.
func (c *coordinator) request() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// send hands an instance's share to the coordinator, unless the run is
// over.
func (c *coordinator) send(rep ckptReport) {
	select {
	case c.reports <- rep:
	case <-c.r.drainCtx.Done():
	}
}

// run takes checkpoints until ctx ends.
func (c *coordinator) run(ctx context.Context) {
	ticks, stop := c.r.cfg.Wall.NewTicker(c.interval)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		case <-c.wake:
		}
		if ctx.Err() != nil {
			// A tick that came as well must not start one more.
			return
		}
		if err := c.take(ctx); err != nil && ctx.Err() == nil {
			c.r.cfg.Logger.Error("checkpoint failed: inputs stay unacknowledged until one completes", "err", err)
		}
	}
}

// take takes one checkpoint: it asks every source instance for a barrier
// and waits for every instance's share, then stores them and completes
// the checkpoint.
func (c *coordinator) take(ctx context.Context) error {
	c.mu.Lock()
	final := c.finalWanted
	c.mu.Unlock()
	if c.feed != nil && !final && !c.feed.takeFresh() {
		// A unit that took nothing since its last checkpoint has nothing
		// to add; and a copy that holds it without receiving (another
		// worker's is pinned) must not write over the one that receives.
		return nil
	}
	c.mu.Lock()
	id := c.next
	c.next++
	c.mu.Unlock()
	start := c.r.cfg.Wall.Now()
	for _, s := range c.sources {
		s.wantBarrier.Store(id)
	}
	for _, s := range c.sources {
		s.barrierNow()
	}
	shares := make(map[string]ckptReport, c.participants)
	var errs []error
	if c.feed != nil {
		rep := c.feed.barrier(id)
		if rep.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", rep.instance, rep.err))
		}
		shares[rep.instance] = rep
	}
	for len(shares) < c.participants {
		c.mu.Lock()
		for name, rep := range c.ended {
			if _, ok := shares[name]; !ok {
				shares[name] = rep
				if rep.err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", name, rep.err))
				}
				// Its acknowledgements go with one checkpoint, as a
				// share's: applied twice, the acker would undo them.
				rep.acks = ackOps{}
				c.ended[name] = rep
			}
		}
		c.mu.Unlock()
		if len(shares) == c.participants {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case rep := <-c.reports:
			if rep.id != id {
				continue
			}
			if rep.err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", rep.instance, rep.err))
			}
			shares[rep.instance] = rep
		case <-c.endCh:
		}
	}
	// An instance that ended after it handed on its share of this
	// checkpoint counts with its final share, which stands for it; the
	// acknowledgements of the share it handed on go with this one too.
	for len(c.reports) > 0 {
		rep := <-c.reports
		if s, ok := shares[rep.instance]; ok && rep.id == id {
			s.acks.append(&rep.acks)
			shares[rep.instance] = s
		}
	}
	acks := &c.held
	for _, rep := range shares {
		acks.append(&rep.acks)
	}
	if err := errors.Join(errs...); err != nil {
		return c.failed(id, err)
	}
	if c.feed != nil && c.feed.givenUp() {
		// Its Inlet gave the unit up: the next holder may have restored
		// already, and takes again what this one would cover.
		return c.failed(id, edge.ErrReleased)
	}
	if err := c.flushEdges(ctx); err != nil {
		return c.failed(id, err)
	}
	bytes, err := c.commit(ctx, id, shares)
	if err != nil {
		if errors.Is(err, checkpoint.ErrCommitted) && c.feed != nil {
			// Another process holds the unit, or held it and wrote late.
			c.feed.current.Store(false)
		}
		return c.failed(id, err)
	}
	// The checkpoint holds the effect of every input deferred to it.
	if c.r.acks != nil {
		var fin finished
		c.r.acks.apply(acks, &fin)
	}
	acks.reset()
	for _, rep := range shares {
		if p := rep.source; p != nil && p.own != nil && p.src != nil {
			if pos, ok := positionerOf(p.src.src); ok {
				pos.Committed(p.own)
			}
		}
	}
	if c.feed != nil {
		c.feed.resumer.Committed(shares[c.feed.instanceName()].source.own)
	}
	for _, rep := range shares {
		if rep.committer != nil {
			rep.committer.Committed()
		}
	}
	now := c.r.cfg.Wall.Now()
	c.mu.Lock()
	c.stats.Last, c.stats.LastAt, c.stats.Duration, c.stats.Bytes = id, now, now.Sub(start), bytes
	c.stats.Completed++
	c.notifyLocked()
	c.mu.Unlock()
	c.r.cfg.Logger.Debug("checkpoint complete", "id", id, "bytes", bytes, "took", now.Sub(start))
	if err := c.store.Prune(ctx, 2); err != nil {
		c.r.cfg.Logger.Warn("checkpoint: pruning old ones failed", "err", err)
	}
	return nil
}

// failed records that checkpoint id failed with err, and returns the
// error that says so.
func (c *coordinator) failed(id uint64, err error) error {
	err = fmt.Errorf("checkpoint %d: %w", id, err)
	if c.feed != nil {
		// What came before it still waits for a checkpoint.
		c.feed.markFresh()
	}
	c.mu.Lock()
	c.stats.Failed++
	c.lastFailed, c.failure = id, err
	c.notifyLocked()
	c.mu.Unlock()
	return err
}

// notifyLocked wakes those waiting for a checkpoint. c.mu is held.
func (c *coordinator) notifyLocked() {
	close(c.taken)
	c.taken = make(chan struct{})
}

// final takes a checkpoint that starts after it was called, and waits
// until it completes: the last of a run that stops. A checkpoint in
// progress completes first.
func (c *coordinator) final(ctx context.Context) error {
	c.mu.Lock()
	target := c.next
	c.finalWanted = true
	c.mu.Unlock()
	for {
		c.request()
		c.mu.Lock()
		last, lastFailed, failure, taken := c.stats.Last, c.lastFailed, c.failure, c.taken
		c.mu.Unlock()
		switch {
		case last >= target:
			return nil
		case lastFailed >= target:
			return fmt.Errorf("topology: final checkpoint failed, the next run resumes from checkpoint %d: %w", last, failure)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topology: final checkpoint: %w", ctx.Err())
		case <-taken:
		}
	}
}

// end records the final share of an instance that ended its stream.
func (c *coordinator) end(rep ckptReport) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended[rep.instance] = rep
	select {
	case c.endCh <- struct{}{}:
	default:
	}
}

// commit stores the bolts' snapshots and the manifest with the sources'
// positions, and returns the bytes stored.
func (c *coordinator) commit(ctx context.Context, id uint64, shares map[string]ckptReport) (int64, error) {
	m := checkpoint.Manifest{ID: id}
	w := state.NewWriter(nil)
	w.PutUvarint(manifestVersion)
	var bytes int64
	positions := 0
	for _, rep := range shares {
		if rep.source != nil {
			positions++
		}
	}
	w.PutLen(positions)
	for _, name := range c.positioned() {
		rep, ok := shares[name]
		if !ok || rep.source == nil {
			return 0, fmt.Errorf("no position from %s", name)
		}
		w.PutString(rep.instance)
		w.PutUvarint(rep.source.seq)
		w.PutUvarint(rep.source.emitted)
		w.PutBool(rep.source.own != nil)
		w.PutBytes(rep.source.own)
	}
	for _, b := range c.bolts {
		name := b.instanceName()
		rep, ok := shares[name]
		if !ok {
			return 0, fmt.Errorf("no snapshot from bolt %s", name)
		}
		if err := c.store.Put(ctx, id, name, rep.snapshot); err != nil {
			return 0, err
		}
		m.Instances = append(m.Instances, name)
		bytes += int64(len(rep.snapshot))
	}
	m.Data = w.Bytes()
	bytes += int64(len(m.Data))
	if err := c.store.Commit(ctx, m); err != nil {
		return 0, err
	}
	return bytes, nil
}

// positioned names the participants whose positions a checkpoint
// records: the sources, or a unit's feed.
func (c *coordinator) positioned() []string {
	var names []string
	for _, s := range c.sources {
		names = append(names, s.instanceName())
	}
	if c.feed != nil {
		names = append(names, c.feed.instanceName())
	}
	return names
}

// manifestVersion is the version of the coordinator's part of a manifest.
const manifestVersion = 1

// restoredRun is the checkpoint a run restores: the sources' positions
// and the bolt instances' snapshots, by instance name.
type restoredRun struct {
	id        uint64
	positions map[string]sourcePosition
	snapshots map[string][]byte
}

// ErrCheckpointMismatch is wrapped by the error of a run whose newest
// checkpoint was taken by another topology: other components, or another
// parallelism.
var ErrCheckpointMismatch = errors.New("topology: checkpoint of another topology")

// errStoreFailed marks a restore that failed because the store did not
// answer, rather than because of what it holds: a unit tries it again.
var errStoreFailed = errors.New("checkpoint store failed")

// loadCheckpoint reads the newest complete checkpoint of c's store: nil,
// nil when there is none.
func (c *coordinator) loadCheckpoint(ctx context.Context) (*restoredRun, error) {
	store, bolts, positioned := c.store, c.bolts, c.positioned()
	ids, err := store.Checkpoints(ctx)
	if err != nil {
		return nil, fmt.Errorf("topology: restore: %w: %w", errStoreFailed, err)
	}
	var damaged error
	for _, id := range ids {
		rr, err := loadOne(ctx, store, id, positioned, bolts)
		var ce *checkpoint.CorruptError
		if !errors.As(err, &ce) {
			return rr, err
		}
		if damaged == nil {
			damaged = err
		}
		// An older checkpoint is restored only if every source can go
		// back to its position: a recording can, a Positioner's log has
		// let go of what the newer one covered, and so has a unit's Inlet.
		for _, s := range c.sources {
			if _, ok := positionerOf(s.src); ok {
				return nil, fmt.Errorf("%w; source %s cannot replay from an older one", damaged, s.instanceName())
			}
		}
		if c.feed != nil {
			return nil, fmt.Errorf("%w; %s cannot deliver again what an older one holds", damaged, c.feed.instanceName())
		}
		c.r.cfg.Logger.Error("checkpoint damaged: restoring the one before", "err", err)
	}
	if damaged != nil {
		return nil, damaged
	}
	return nil, nil
}

// loadOne reads checkpoint id of store.
func loadOne(ctx context.Context, store checkpoint.Store, id uint64, positioned []string, bolts []*boltInstance) (*restoredRun, error) {
	m, err := store.Manifest(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("topology: restore checkpoint %d: %w: %w", id, errStoreFailed, err)
	}
	rr := &restoredRun{id: m.ID, positions: map[string]sourcePosition{}, snapshots: map[string][]byte{}}
	r := state.NewReader(m.Data)
	if v := r.ReadUvarint(); v != manifestVersion && r.Err() == nil {
		return nil, fmt.Errorf("topology: restore checkpoint %d: manifest version %d, want %d", m.ID, v, manifestVersion)
	}
	for range r.ReadLen() {
		name := r.ReadString()
		p := sourcePosition{seq: r.ReadUvarint(), emitted: r.ReadUvarint()}
		if own := r.ReadBool(); own {
			p.own = r.ReadBytes()
		} else {
			r.ReadBytes()
		}
		rr.positions[name] = p
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("topology: restore checkpoint %d: manifest: %w", m.ID, err)
	}
	var missing []string
	for _, name := range positioned {
		if _, ok := rr.positions[name]; !ok {
			missing = append(missing, name)
		}
	}
	for _, b := range bolts {
		name := b.instanceName()
		snap, err := store.Get(ctx, m.ID, name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && !slices.Contains(m.Instances, name) {
				missing = append(missing, name)
				continue
			}
			return nil, fmt.Errorf("topology: restore checkpoint %d: %w: %w", m.ID, errStoreFailed, err)
		}
		rr.snapshots[name] = snap
	}
	if len(missing) > 0 || len(m.Instances) != len(bolts) || len(rr.positions) != len(positioned) {
		return nil, fmt.Errorf("%w: checkpoint %d holds %d bolt instances and %d positions, this run has %d and %d; missing: %v",
			ErrCheckpointMismatch, m.ID, len(m.Instances), len(rr.positions), len(bolts), len(positioned), missing)
	}
	return rr, nil
}
