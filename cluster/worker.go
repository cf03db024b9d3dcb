package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sensorstorm/sensorstorm/checkpoint"
	"github.com/sensorstorm/sensorstorm/checkpoint/jetstreamstore"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/internal/jsretry"
	"github.com/sensorstorm/sensorstorm/jetstreamedge"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Bucket names of a pipeline, given as its jetstreamedge.Token: leases
// and worker announcements expire, the marks of finished sources stay.
func leaseBucket(tok string) string  { return "sensorstorm_" + tok + "_leases" }
func workerBucket(tok string) string { return "sensorstorm_" + tok + "_workers" }
func doneBucket(tok string) string   { return "sensorstorm_" + tok + "_done" }

// CheckpointBucket returns the object store bucket that keeps the
// checkpoints of pipeline's units (its manifests are in the key-value
// bucket of the same name with "-manifests" appended).
func CheckpointBucket(pipeline string) string { return checkpointBucket(jetstreamedge.Token(pipeline)) }

func checkpointBucket(tok string) string { return "sensorstorm_" + tok + "_checkpoints" }

// sourceKey is the key of a source instance in the lease and done buckets.
func sourceKey(name string, instance int) string {
	return fmt.Sprintf("source.%s.%d", jetstreamedge.Token(name), instance)
}

// Announcement is what a worker tells the others about itself, renewed
// every sixth of the lease TTL.
type Announcement struct {
	Worker string    `json:"worker"`
	Since  time.Time `json:"since"`
	// Leases are the source instances the worker replays now.
	Leases []string `json:"leases"`
	// Units are the consumers (bolt instances) it received data from since
	// its last announcement.
	Units []string `json:"units"`
	// Assigned are the units assigned to it among the workers it saw
	// announced: those it runs once they settle (see Config.RebalanceDelay).
	Assigned []string `json:"assigned,omitempty"`
	// Held are the units it holds: those it pulls for, and those it
	// handed over and has not unpinned yet. A unit assigned elsewhere is
	// held here until it settles.
	Held []string `json:"held,omitempty"`
	// Ended are the units whose instances ended their streams on it:
	// every worker's copy of them may pull then, to end too.
	Ended []string `json:"ended,omitempty"`
}

// Worker is one process of a pipeline's cluster.
type Worker struct {
	cfg     Config
	edges   *jetstreamedge.Transport
	leases  jetstream.KeyValue
	workers jetstream.KeyValue
	done    jetstream.KeyValue
	since   time.Time
	// incarnation numbers the particles this worker's bolt instances make
	// without a parent apart from other workers'.
	incarnation uint32

	mu   sync.Mutex // guards held, liveSources and what follows
	held map[string]bool
	// liveSources are the keys of the live source instances (LeaseLiveSource), which
	// are assigned among the workers as units are.
	liveSources []string
	// self is the worker's key in the announcement bucket; live the keys
	// of the workers announced (self among them), owners the owner of
	// every unit among them, lost when this worker lost the units
	// assigned elsewhere that it still pulls for (see owns), ended the
	// units a worker announced ended.
	self   string
	live   []string
	owners map[string]string
	lost   map[string]time.Time
	ended  map[string]bool
	// heldElsewhere are the units another worker announced it holds: a
	// unit assigned here starts once its last holder let go of it.
	heldElsewhere map[string]bool
	// checkpoints keeps the units' checkpoints.
	checkpoints *jetstreamstore.Store

	// seen is when each worker other than this one was last read
	// announced (see members).
	seen map[string]time.Time
	// leaving tells that the worker hands its share over (Leave); left is
	// closed then.
	leaving bool
	left    chan struct{}

	// announcing serializes announcing and withdrawing, so that no
	// announcement lands after the withdrawal.
	announcing sync.Mutex
	// fence tells when the worker must stop acting as an owner: its
	// announcement may expire out of its reach (see guard).
	fence *fenceClock
}

// Join makes the pipeline's stream and buckets on nc's JetStream, or
// updates them, and returns the worker. Give its Transport and LeaseSource
// to the pipeline's build, and call Run beside the topology's.
func Join(ctx context.Context, nc *nats.Conn, cfg Config) (*Worker, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	w := &Worker{cfg: cfg, held: map[string]bool{}, since: time.Now(), incarnation: rand.Uint32(),
		self: jetstreamedge.Token(cfg.Worker), lost: map[string]time.Time{}, seen: map[string]time.Time{}, left: make(chan struct{})}
	w.live = []string{w.self}
	w.fence = newFenceClock(cfg.fenceAfter(), time.Now)
	if cfg.Edges.Owns == nil {
		cfg.Edges.Owns = w.owns
	}
	w.edges, err = jetstreamedge.New(ctx, nc, cfg.Edges)
	if err != nil {
		return nil, err
	}
	replicas := max(cfg.Edges.Replicas, 1)
	tok := jetstreamedge.Token(cfg.Pipeline)
	for _, b := range []struct {
		kv   *jetstream.KeyValue
		name string
		ttl  time.Duration
	}{
		{&w.leases, leaseBucket(tok), cfg.LeaseTTL},
		{&w.workers, workerBucket(tok), cfg.LeaseTTL},
		{&w.done, doneBucket(tok), 0},
	} {
		err = jsretry.Do(ctx, cfg.Logger, "making the bucket "+b.name, func() (err error) {
			*b.kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b.name, TTL: b.ttl, Replicas: replicas})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: bucket %s: %w", b.name, err)
		}
	}
	// The units are assigned among the workers there from the start.
	if err := w.refresh(ctx); err != nil {
		return nil, fmt.Errorf("cluster: reading the workers: %w", err)
	}
	err = jsretry.Do(ctx, cfg.Logger, "opening the checkpoint store", func() (err error) {
		w.checkpoints, err = jetstreamstore.New(ctx, js, jetstreamstore.Config{Bucket: CheckpointBucket(cfg.Pipeline), Replicas: replicas})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return w, nil
}

// CheckpointStore returns the store of the checkpoints of the pipeline's
// units: give it to the pipeline's build (pipeline.Options.Checkpoints),
// so that a unit that moves, or whose worker restarts, restores its state
// from its last checkpoint, wherever it ran.
func (w *Worker) CheckpointStore() checkpoint.Partitioned { return w.checkpoints }

// Name returns the worker's name.
func (w *Worker) Name() string { return w.cfg.Worker }

// Incarnation returns a number that tells this worker's run apart from
// others: give it to the pipeline's build (pipeline.Options.Incarnation).
func (w *Worker) Incarnation() uint32 { return w.incarnation }

// Transport returns the transport of the pipeline's edges.
func (w *Worker) Transport() *jetstreamedge.Transport { return w.edges }

// Run announces the worker and assigns the units among the workers
// announced until ctx ends, then withdraws the announcement. Once the
// worker leaves (Leave), it no longer announces it, and goes on assigning
// the units among the others. A failed announcement is logged and tried
// again; Run returns nil, or the error of the withdrawal, after which the
// others wait for the announcement to expire.
//
// A worker whose announcements did not get through for half the lease
// TTL (a partition, a NATS node away) fences itself off, before the
// others can take it for gone: it publishes and acknowledges nothing, its
// units start afresh and it gives its leases up
// (jetstreamedge.Transport.Fence). Once an announcement gets through
// again, it rejoins as a worker without state: its units start afresh
// where they are assigned, and it competes for leases again.
func (w *Worker) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { w.rebalance(ctx) })
	wg.Go(func() { w.guard(ctx) })
	ticker := time.NewTicker(w.cfg.announceEvery())
	defer ticker.Stop()
	last := w.since
	for {
		now := time.Now()
		// An announcement slower than the fence is of no use to it.
		put, cancel := context.WithTimeout(ctx, w.fence.after)
		wrote, err := w.announce(put, last)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			w.cfg.Logger.Warn("announcing the worker failed", "worker", w.cfg.Worker, "err", err)
		case wrote:
			w.fence.renewed(now)
			// The transport lifts its fence once the instances it
			// stopped started afresh: tried at every announcement.
			if fenced, _ := w.edges.Fenced(); fenced && !w.fence.up() && w.edges.Unfence() {
				w.cfg.Logger.Info("announced again: rejoining without state", "worker", w.cfg.Worker)
			}
		}
		last = now
		select {
		case <-ctx.Done():
			withdraw, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := w.withdraw(withdraw); err != nil {
				return fmt.Errorf("cluster: withdrawing worker %s: %w", w.cfg.Worker, err)
			}
			return nil
		case <-ticker.C:
		}
	}
}

// announce renews the worker's announcement, unless it leaves, and
// reports whether it wrote it.
func (w *Worker) announce(ctx context.Context, since time.Time) (bool, error) {
	w.announcing.Lock()
	defer w.announcing.Unlock()
	w.mu.Lock()
	if w.leaving {
		w.mu.Unlock()
		return false, nil
	}
	a := Announcement{Worker: w.cfg.Worker, Since: w.since, Units: w.edges.ActiveUnits(since)}
	for k := range w.held {
		a.Leases = append(a.Leases, k)
	}
	w.mu.Unlock()
	a.Assigned, a.Held, a.Ended = w.Assigned(), w.edges.HeldUnits(), w.edges.EndedUnits()
	slices.Sort(a.Leases)
	data, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	if _, err = w.workers.Put(ctx, w.self, data); err != nil {
		return false, err
	}
	return true, nil
}

// guard fences the worker off (jetstreamedge.Transport.Fence) until ctx
// ends, once it could not renew its announcement for the part of the
// lease TTL that fenceClock keeps: from then on, until an announcement
// gets through again, it publishes and acknowledges nothing, its units
// start afresh and its leases go (renewLease), before any other worker
// can take them. A worker that leaves hands its share over itself.
func (w *Worker) guard(ctx context.Context) {
	ticker := time.NewTicker(max(w.fence.after/8, 10*time.Millisecond))
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if !w.leaves() && w.fence.check() {
			w.cfg.Logger.Warn("announcement not renewed in time: fencing the worker off", "worker", w.cfg.Worker, "after", w.fence.after)
			w.edges.Fence()
		}
	}
}

// withdraw deletes the worker's announcement.
func (w *Worker) withdraw(ctx context.Context) error {
	w.announcing.Lock()
	defer w.announcing.Unlock()
	return w.workers.Delete(ctx, w.self)
}

// LeaseSource returns src leased: of all the workers, the one holding the
// lease of this source instance, a key in a key-value bucket, replays it.
// The holder renews the lease, recording with it a checkpoint, the prefix
// of the source's particles that JetStream confirmed; when it dies the
// lease expires, and another worker takes it and replays the source past
// the checkpoint (topology.SourceEmitter.Skip keeps the particles'
// identities, so that the instances downstream drop the copies of those
// emitted after the checkpoint). A source replayed to its end, with
// everything it emitted confirmed by JetStream, is marked done and never
// replayed again.
//
// A recording is not handed over, by a worker that leaves either. Its
// lease is taken as it starts, so there is no point before it started to
// hand it over at. Handing a replay over while it runs could lose and
// double nothing (stop, wait until JetStream confirmed what it emitted,
// record that as the checkpoint), but its successor would read the file
// again from its start up to the checkpoint, and the worker that handed
// it over could never take it back, since a source runs once: a cluster
// left with that worker alone would stall. A replay ends by itself; a
// live feed does not, which is why its instances are the leases that
// spread (LeaseLiveSource). A worker that could not renew the lease (NATS
// out of reach for two renewals in a row, two thirds of the lease TTL),
// or that fenced itself off (see Run), leaves the source to the other
// workers: since a source runs once, it waits until the worker that took
// the lease over marked the source done, then ends its stream.
func (w *Worker) LeaseSource(name string, instance int, src topology.Source) topology.Source {
	l := &leasedSource{w: w, key: sourceKey(name, instance), inner: src, confirmed: make(chan struct{}, 1)}
	l.innerAckr, _ = src.(topology.Acknowledger)
	return l
}

// errLeaseLost cancels a source whose lease could not be renewed;
// errFenced one whose worker fenced itself off.
var (
	errLeaseLost = errors.New("cluster: lease lost")
	errFenced    = fmt.Errorf("%w: worker fenced off", errLeaseLost)
)

// fenced reports whether the worker is fenced off, and returns a channel
// closed when that changes (none without a transport: tests of parts).
func (w *Worker) fenced() (bool, <-chan struct{}) {
	if w.edges == nil {
		return false, nil
	}
	return w.edges.Fenced()
}

// awaitUnfenced returns once the worker is not fenced off, or ctx ended.
func (w *Worker) awaitUnfenced(ctx context.Context) {
	if w.edges != nil {
		w.edges.AwaitUnfenced(ctx)
	}
}
