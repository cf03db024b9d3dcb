package topology

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
)

// Topology is a graph of sources and bolts. Build it with AddSource and
// AddBolt, then call Run once.
type Topology struct {
	cfg     Config
	sources []*sourceSpec
	bolts   []*Bolt
	stats   map[string]*ComponentStats
	errs    []error
	ran     atomic.Bool
	current atomic.Pointer[run]
}

type sourceSpec struct {
	name    string
	factory SourceFactory
	cfg     SourceConfig
}

// Bolt is a bolt being declared; its methods declare its inputs.
type Bolt struct {
	name    string
	factory operation.Factory
	cfg     BoltConfig
	inputs  []inputSpec
}

type inputSpec struct {
	from, stream string
	grouping     Grouping
}

// New returns an empty topology.
func New(cfg Config) (*Topology, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Topology{cfg: cfg, stats: make(map[string]*ComponentStats)}, nil
}

// AddSource adds a source with cfg.Parallelism instances made by f.
func (t *Topology) AddSource(name string, f SourceFactory, cfg SourceConfig) {
	if cfg.Parallelism == 0 {
		cfg.Parallelism = 1
	}
	if cfg.FutureBound == 0 {
		cfg.FutureBound = syncbuffer.DefaultFutureBound
	}
	t.declare(name)
	t.sources = append(t.sources, &sourceSpec{name: name, factory: f, cfg: cfg})
}

// AddBolt adds a bolt with cfg.Parallelism instances, each running an
// operation made by f. Declare its inputs on the returned Bolt.
func (t *Topology) AddBolt(name string, f operation.Factory, cfg BoltConfig) *Bolt {
	if cfg.Parallelism == 0 {
		cfg.Parallelism = 1
	}
	t.declare(name)
	b := &Bolt{name: name, factory: f, cfg: cfg}
	t.bolts = append(t.bolts, b)
	return b
}

func (t *Topology) declare(name string) {
	if _, dup := t.stats[name]; dup || name == "" {
		t.errs = append(t.errs, fmt.Errorf("component name %q empty or used twice", name))
	}
	t.stats[name] = new(ComponentStats)
}

// Input subscribes the bolt to the default stream of component from, with
// grouping g.
func (b *Bolt) Input(from string, g Grouping) *Bolt { return b.InputStream(from, "", g) }

// InputStream subscribes the bolt to a named stream of component from, such
// as LateStream.
func (b *Bolt) InputStream(from, stream string, g Grouping) *Bolt {
	b.inputs = append(b.inputs, inputSpec{from: from, stream: stream, grouping: g})
	return b
}

// Stats returns the counters of the named component, or nil.
func (t *Topology) Stats(name string) *ComponentStats { return t.stats[name] }

// Components returns the names of the sources, then the bolts, in the
// order they were added.
func (t *Topology) Components() []string {
	var names []string
	for _, s := range t.sources {
		names = append(names, s.name)
	}
	for _, b := range t.bolts {
		names = append(names, b.name)
	}
	return names
}

// validate checks the graph: known inputs, parallelism, no cycles.
func (t *Topology) validate() error {
	errs := append([]error(nil), t.errs...)
	if len(t.sources) == 0 {
		errs = append(errs, errors.New("no source"))
	}
	deps := map[string][]string{}
	for _, s := range t.sources {
		if s.cfg.Parallelism < 1 {
			errs = append(errs, fmt.Errorf("source %s: parallelism %d", s.name, s.cfg.Parallelism))
		}
	}
	for _, b := range t.bolts {
		if b.cfg.Parallelism < 1 {
			errs = append(errs, fmt.Errorf("bolt %s: parallelism %d", b.name, b.cfg.Parallelism))
		}
		if len(b.inputs) == 0 {
			errs = append(errs, fmt.Errorf("bolt %s: no input", b.name))
		}
		for _, in := range b.inputs {
			if _, ok := t.stats[in.from]; !ok {
				errs = append(errs, fmt.Errorf("bolt %s: input from unknown component %q", b.name, in.from))
			}
			if in.grouping == nil {
				errs = append(errs, fmt.Errorf("bolt %s: input from %s has no grouping", b.name, in.from))
			}
			if isForward(in.grouping) {
				if err := t.checkForward(b, in.from); err != nil {
					errs = append(errs, err)
				}
			}
			deps[b.name] = append(deps[b.name], in.from)
		}
	}
	if cyc := findCycle(deps); cyc != "" {
		errs = append(errs, fmt.Errorf("cycle through %s: end of stream could never flow", cyc))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidTopology, errors.Join(errs...))
	}
	return nil
}

// checkForward checks a forward edge from the component from into b: it
// starts at a bolt of b's parallelism. A source cannot send on one: a bolt
// chained to it would run wherever the source runs, outside the units a
// Transport assigns.
func (t *Topology) checkForward(b *Bolt, from string) error {
	for _, s := range t.sources {
		if s.name == from {
			return fmt.Errorf("bolt %s: forward input from source %s: a forward edge starts at a bolt", b.name, from)
		}
	}
	if p := t.parallelism(from); p != 0 && p != b.cfg.Parallelism {
		return fmt.Errorf("bolt %s: forward input from %s: parallelism %d, %s's %d: a forward edge joins bolts of the same parallelism", b.name, from, b.cfg.Parallelism, from, p)
	}
	return nil
}

// chainedTo returns the bolt that b's inputs all come from on forward
// edges, or "" if they do not.
func (b *Bolt) chainedTo() string {
	from := ""
	for _, in := range b.inputs {
		if !isForward(in.grouping) || (from != "" && in.from != from) {
			return ""
		}
		from = in.from
	}
	return from
}

func findCycle(deps map[string][]string) string {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var visit func(n string) string
	visit = func(n string) string {
		switch state[n] {
		case visiting:
			return n
		case done:
			return ""
		}
		state[n] = visiting
		for _, d := range deps[n] {
			if c := visit(d); c != "" {
				return c
			}
		}
		state[n] = done
		return ""
	}
	for n := range deps {
		if c := visit(n); c != "" {
			return c
		}
	}
	return ""
}

// run is the state of one Run.
type run struct {
	cfg      Config
	clock    streamclock.Clock
	position atomic.Int64 // newest event time the sources have handed on
	pool     *batchPool
	acks     *ackService  // nil without acking
	ckpt     *coordinator // nil without checkpoints
	drainCtx context.Context
	// stopped reports that Run's context ended. With a Transport, the
	// process then abandons its share of the run to the others.
	stopped func() bool
	sources []*sourceInstance
	bolts   []*boltInstance
}

func (r *run) wallNanos() int64 { return r.cfg.Wall.Now().UnixNano() }

// advance moves the sources' position forward to t.
func (r *run) advance(t int64) {
	for {
		p := r.position.Load()
		if t <= p || r.position.CompareAndSwap(p, t) {
			return
		}
	}
}

func (r *run) deadLetter(d DeadLetter) {
	if r.cfg.DeadLetters != nil {
		r.cfg.DeadLetters.DeadLetter(r.drainCtx, d)
	}
}

// Run runs the topology until every source has ended and everything they
// emitted was processed, or until ctx is cancelled and the topology has
// drained. It returns the sources' and sinks' errors, joined, and
// ErrDrainTimeout when draining took longer than Config.DrainTimeout.
// The run owns the sources it started: those that are io.Closers are
// closed before Run returns, once nothing can complete a tree of theirs.
func (t *Topology) Run(ctx context.Context) error {
	if !t.ran.CompareAndSwap(false, true) {
		return errors.New("topology: Run called twice")
	}
	if err := t.validate(); err != nil {
		return err
	}
	drainCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	r, err := t.build(drainCtx)
	if err != nil {
		return err
	}
	r.stopped = func() bool { return ctx.Err() != nil }
	t.current.Store(r)
	srcCtx, stopSources := context.WithCancel(ctx)
	defer stopSources()

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		// stopped is set when a run that takes checkpoints stopped
		// before its end, without ending its streams.
		stopped bool
	)
	fail := func(err error) {
		if err == nil {
			return
		}
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		// Any failure stops the sources: the rest drains in order. A
		// destination given up on stops everything at once, so that
		// nothing more is acknowledged.
		stopSources()
		if errors.Is(err, ErrGaveUp) {
			abort()
		}
	}
	for _, b := range r.bolts {
		switch {
		case b.head != nil:
			// Its chain's head runs it.
			continue
		case b.inlet != nil:
			wg.Go(func() { fail(b.runRemote(srcCtx, drainCtx, fail)) })
			continue
		}
		wg.Go(func() { fail(b.run(drainCtx)) })
	}
	var aux sync.WaitGroup
	auxCtx, stopAux := context.WithCancel(drainCtx)
	for _, s := range r.sources {
		s.ctx = srcCtx
		ticks, stop := t.cfg.Wall.NewTicker(linger)
		aux.Go(func() {
			defer stop()
			s.housekeep(auxCtx, ticks)
		})
		wg.Go(func() {
			fail(s.run())
			if r.ckpt != nil && srcCtx.Err() != nil {
				// A run that takes checkpoints stops without ending its
				// streams: open windows stay open, in the checkpoint.
				<-drainCtx.Done()
				return
			}
			fail(s.finish(drainCtx))
		})
	}
	if r.acks != nil {
		aux.Go(func() { r.expireTrees(auxCtx) })
	}
	if r.ckpt != nil {
		aux.Go(func() { r.ckpt.run(auxCtx) })
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-srcCtx.Done():
		if r.ckpt != nil {
			mu.Lock()
			failed := len(errs) > 0
			mu.Unlock()
			if !failed {
				finalCtx, cancel := context.WithTimeout(drainCtx, t.cfg.DrainTimeout)
				fail(r.ckpt.final(finalCtx))
				cancel()
			}
			abort()
			<-finished
			stopped = true
			break
		}
		// On the wall clock, as every timeout of the run: a test's fake
		// clock decides when draining has taken too long.
		expired, stop := t.cfg.Wall.NewTicker(t.cfg.DrainTimeout)
		select {
		case <-finished:
		case <-expired:
			err := ErrDrainTimeout
			if failing := r.failingDestinations(); len(failing) > 0 {
				err = fmt.Errorf("%w after %v, waiting for a failing destination: %w", ErrDrainTimeout, t.cfg.DrainTimeout, errors.Join(failing...))
			}
			fail(err)
			abort()
			<-finished
		}
		stop()
	}
	stopAux()
	aux.Wait()
	errs = append(errs, r.closeOperations()...)
	errs = append(errs, r.closeSources()...)
	if (r.stopped() && t.cfg.Transport != nil) || stopped {
		errs = dropAbandoned(errs)
	}
	return errors.Join(dropAborted(errs)...)
}

// dropAbandoned removes the errors of a run abandoned to the other
// processes: the refused sends and the cancellations.
func dropAbandoned(errs []error) []error {
	var out []error
	for _, e := range errs {
		if !errors.Is(e, errAbandoned) && !errors.Is(e, context.Canceled) {
			out = append(out, e)
		}
	}
	return out
}

// closeOperations closes the operations that are io.Closers once every
// instance has stopped: an operation shared by the instances of a bolt
// (operation.Stateless) is closed once, after the last of them.
func (r *run) closeOperations() []error {
	var (
		closed []io.Closer
		errs   []error
	)
	for _, b := range r.bolts {
		c, ok := b.op.(io.Closer)
		if !ok || (reflect.TypeOf(c).Comparable() && slices.Contains(closed, c)) {
			continue
		}
		closed = append(closed, c)
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("bolt %s[%d]: close: %w", b.name, b.index, err))
		}
	}
	return errs
}

// linger is how long a partly filled batch of a source may wait.
const linger = 5 * time.Millisecond

// dropAborted removes the cancellations caused by an abort: ErrDrainTimeout
// or ErrGaveUp says it once.
func dropAborted(errs []error) []error {
	if !slicesContains(errs, ErrDrainTimeout) && !slicesContains(errs, ErrGaveUp) {
		return errs
	}
	var out []error
	for _, e := range errs {
		if !errors.Is(e, context.Canceled) {
			out = append(out, e)
		}
	}
	return out
}

func slicesContains(errs []error, target error) bool {
	for _, e := range errs {
		if errors.Is(e, target) {
			return true
		}
	}
	return false
}

// expireTrees times out lost trees until ctx ends. Time during which a
// bolt instance had work waiting does not count towards the progress
// timeout: under backpressure trees are queued, not lost, and must not be
// replayed in a storm.
func (r *run) expireTrees(ctx context.Context) {
	ticks, stop := r.cfg.Wall.NewTicker(r.cfg.HousekeepingInterval)
	defer stop()
	var paused time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			now := r.wallNanos()
			for _, b := range r.bolts {
				// The progress clock must never run backwards.
				paused = max(paused, b.backlog.total(now))
			}
			r.acks.expire(now, paused)
		}
	}
}

// build makes the instances and wires their routers to the inboxes.
func (t *Topology) build(drainCtx context.Context) (*run, error) {
	r := &run{cfg: t.cfg, clock: t.cfg.Clock, pool: newBatchPool(t.cfg.BatchSize), drainCtx: drainCtx}
	r.position.Store(math.MinInt64)
	if r.clock == nil {
		r.clock = streamclock.Live(t.cfg.Wall)
		if t.cfg.Replay {
			r.clock = streamclock.Func(r.position.Load)
		}
	}
	var origin uint32
	instances := map[string][]*router{}
	sourcesByName := map[string]int{}
	for _, spec := range t.sources {
		sourcesByName[spec.name] = spec.cfg.Parallelism
		for i := range spec.cfg.Parallelism {
			origin++
			src := spec.factory(i)
			s := &sourceInstance{name: spec.name, index: i, origin: origin, src: src, topo: r, stats: t.stats[spec.name], ctx: drainCtx}
			s.ackr, _ = src.(Acknowledger)
			s.bound = int64(spec.cfg.FutureBound)
			if t.cfg.Replay {
				s.bound = -1
			}
			s.router = newRouter(r.pool)
			s.router.barriers = t.cfg.Checkpoints.Store != nil
			if t.cfg.Acking.Enabled {
				s.pending = newTokens(t.cfg.Acking.MaxPending)
			}
			r.sources = append(r.sources, s)
			instances[spec.name] = append(instances[spec.name], &s.router)
		}
	}
	byName := map[string][]*boltInstance{}
	// feeds are the Feeds of the instances fed from outside; their trees
	// are numbered after the sources'.
	var feeds []*feed
	for _, spec := range t.bolts {
		inputs := 0
		for _, in := range spec.inputs {
			if isForward(in.grouping) {
				inputs++
				continue
			}
			inputs += t.parallelism(in.from)
		}
		bufCfg := spec.cfg.Buffer
		if t.cfg.Replay {
			// A recording's silences are data: they hold the watermark
			// as they are, and the sources judge wild timestamps
			// against the recording, so that the output is a function
			// of the data.
			bufCfg.IdleTimeout, bufCfg.FutureBound = -1, -1
		}
		for i := range spec.cfg.Parallelism {
			origin++
			buf, err := syncbuffer.New(bufCfg, inputs, envelopeKey, envelopeIsMeta)
			if err != nil {
				return nil, fmt.Errorf("topology: bolt %s: %w", spec.name, err)
			}
			buf.MeasureWith(envelopeSize)
			b := &boltInstance{
				name: spec.name, index: i, origin: origin, factory: spec.factory, buf: buf,
				late: buf.Config().Late, inbox: make(chan *batch, t.cfg.InboxSize), inputs: inputs,
				topo: r, stats: t.stats[spec.name], edges: acker.NewEdgeIDs(), seq: uint64(t.cfg.Incarnation) << 32,
				heldInputs: map[operation.Anchor]*held{}, drainedInputs: make([]bool, inputs),
				endedInputs: make([]bool, inputs), lastWM: math.MinInt64, nextTick: math.MinInt64,
			}
			b.op, b.caps = b.newOperation()
			if i == 0 {
				if err := checkWrapped(b.op); err != nil {
					return nil, fmt.Errorf("topology: bolt %s: %w", spec.name, err)
				}
			}
			if t.cfg.Checkpoints.Store != nil {
				b.ckpt = newBoltCheckpoint(inputs)
			}
			if bufCfg.IdleTimeout >= 0 {
				b.queued = make([]atomic.Int64, inputs)
			}
			b.router = newRouter(r.pool)
			b.router.barriers = t.cfg.Checkpoints.Store != nil
			if t.cfg.Transport != nil && spec.chainedTo() == "" {
				if out, in, ok := t.cfg.Transport.Edge(spec.name, i); ok {
					b.outlet, b.inlet = out, in
					b.feed = &feed{b: b, origin: uint32(len(r.sources) + len(feeds) + 1), pending: newTokens(t.cfg.Acking.MaxPending),
						edges: acker.NewEdgeIDs(), dones: map[uint64]feedTree{}}
					feeds = append(feeds, b.feed)
				}
			}
			r.bolts = append(r.bolts, b)
			byName[spec.name] = append(byName[spec.name], b)
			instances[spec.name] = append(instances[spec.name], &b.router)
		}
	}
	// Wire every input: each upstream instance is one input of every
	// downstream instance, numbered in declaration order; on a forward
	// edge, upstream instance i is one input of downstream instance i
	// alone, numbered as one.
	targetOf := func(down *boltInstance, input int) target {
		if down.outlet != nil {
			return target{inbox: &remoteInbox{out: down.outlet, run: r}, input: input}
		}
		ib := chanInbox{ch: down.inbox}
		if down.queued != nil {
			ib.queued = &down.queued[input]
		}
		if t.cfg.Acking.Enabled {
			// Only the acker's progress timeout needs the backlog.
			ib.backlog, ib.wall = &down.backlog, r.wallNanos
		}
		return target{inbox: ib, input: input}
	}
	for _, spec := range t.bolts {
		next := 0
		for _, in := range spec.inputs {
			if isForward(in.grouping) {
				for i, up := range instances[in.from] {
					up.addOutput(in.stream, in.grouping, []target{targetOf(byName[spec.name][i], next)})
				}
				next++
				continue
			}
			for _, up := range instances[in.from] {
				var targets []target
				for _, down := range byName[spec.name] {
					targets = append(targets, targetOf(down, next))
				}
				up.addOutput(in.stream, in.grouping, targets)
				next++
			}
		}
	}
	if t.cfg.Transport != nil {
		for _, spec := range t.bolts {
			if from := spec.chainedTo(); from != "" {
				for i, b := range byName[spec.name] {
					b.up = byName[from][i]
				}
			}
		}
		chain(r.bolts)
		if t.cfg.Checkpoints.Store != nil {
			if err := t.units(r); err != nil {
				return nil, err
			}
		}
	}
	if t.cfg.Acking.Enabled {
		acks, err := newAckService(t.timeouts(r.bolts), r.sources, feeds, (len(r.sources)+len(feeds))*t.cfg.Acking.MaxPending, r.wallNanos)
		if err != nil {
			return nil, fmt.Errorf("topology: %w", err)
		}
		r.acks = acks
	}
	for _, s := range r.sources {
		s.edges = acker.NewEdgeIDs()
		s.router.beforeDeliver = s.beforeDeliver
		s.moveHorizon()
	}
	if t.cfg.Checkpoints.Store != nil && t.cfg.Transport == nil {
		if err := t.restore(drainCtx, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// chain gives every chain head (an instance fed by a Transport) the
// instances chained to it: those whose up is the head or an instance
// chained to it.
func chain(bolts []*boltInstance) {
	depth := map[*boltInstance]int{}
	for _, b := range bolts {
		head, n := b.up, 1
		for head != nil && head.inlet == nil {
			head, n = head.up, n+1
		}
		if head != nil {
			b.head, depth[b] = head, n
			head.chain = append(head.chain, b)
		}
	}
	for _, b := range bolts {
		// An instance stops after the one it takes from: see stopChain.
		slices.SortStableFunc(b.chain, func(x, y *boltInstance) int { return depth[x] - depth[y] })
	}
}

// restore starts r's checkpoints and restores the newest complete one:
// every bolt instance's state, and every source's position.
func (t *Topology) restore(ctx context.Context, r *run) error {
	r.ckpt = newCoordinator(r, t.cfg.Checkpoints, t.cfg.Checkpoints.Store, r.sources, r.bolts, nil)
	rr, err := r.ckpt.loadCheckpoint(ctx)
	if err != nil || rr == nil {
		return err
	}
	for _, b := range r.bolts {
		if err := b.restore(rr.snapshots[b.instanceName()]); err != nil {
			return fmt.Errorf("topology: restore checkpoint %d: %s: %w", rr.id, b.instanceName(), err)
		}
	}
	for _, s := range r.sources {
		if err := s.resume(rr.positions[s.instanceName()]); err != nil {
			return fmt.Errorf("topology: restore checkpoint %d: %s: %w", rr.id, s.instanceName(), err)
		}
	}
	r.ckpt.next = rr.id + 1
	r.ckpt.stats.Restored, r.ckpt.stats.Last = rr.id, rr.id
	t.cfg.Logger.Info("restored checkpoint", "id", rr.id)
	return nil
}

// timeouts returns the acking configuration with the timeouts left at zero
// derived from what holds trees open. A particle waits in a sync buffer for
// up to its window (and, live, an idle input's timeout) without progress:
// the progress timeout outlasts that twice. A window holds its inputs for
// its span: the hard timeout outlasts the longest hold twice, plus a
// minute. Both count only time without work waiting (see ackService).
func (t *Topology) timeouts(bolts []*boltInstance) AckingConfig {
	a := t.cfg.Acking
	var buffered, held time.Duration
	for _, b := range bolts {
		cfg := b.buf.Config()
		wait := cfg.Window
		if cfg.IdleTimeout > 0 {
			wait += cfg.IdleTimeout
		}
		buffered = max(buffered, wait)
		var span time.Duration
		if s := b.caps.span; s != nil && b.ckpt == nil {
			span = s.Span()
		}
		if b.ckpt != nil {
			// Held inputs are acknowledged by the next checkpoint.
			span = 2 * t.checkpointInterval()
		}
		held = max(held, wait+span)
	}
	if a.ProgressTimeout == 0 {
		a.ProgressTimeout = max(acker.DefaultProgressTimeout, 2*buffered)
	}
	if a.HardTimeout == 0 {
		a.HardTimeout = max(acker.DefaultHardTimeout, 2*held+time.Minute)
	}
	return a
}

// checkpointInterval is the wall time between checkpoints.
func (t *Topology) checkpointInterval() time.Duration {
	if t.cfg.Checkpoints.Interval > 0 {
		return t.cfg.Checkpoints.Interval
	}
	return DefaultCheckpointInterval
}

func (t *Topology) parallelism(name string) int {
	for _, s := range t.sources {
		if s.name == name {
			return s.cfg.Parallelism
		}
	}
	for _, b := range t.bolts {
		if b.name == name {
			return b.cfg.Parallelism
		}
	}
	return 0
}
