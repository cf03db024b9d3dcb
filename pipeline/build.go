package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sensorstorm/sensorstorm/checkpoint"
	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/postgres"
	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// DefaultUnitCheckpointInterval is the wall time between two checkpoints
// of a unit on a cluster when the pipeline sets none: a unit's input is
// acknowledged at its checkpoints, and JetStream delivers a consumer at
// most its MaxAckPending messages unacknowledged.
const DefaultUnitCheckpointInterval = time.Second

// Options are what Build takes from its caller rather than from the file.
type Options struct {
	// Dir is the directory relative paths are resolved against. Defaults
	// to the directory of the pipeline file.
	Dir string
	// Stdin is read by file sources reading "-". Defaults to os.Stdin.
	Stdin io.Reader
	// Stdout receives the output of sinks writing to "-". Defaults to
	// os.Stdout.
	Stdout io.Writer
	// Logger, Wall and DeadLetters are passed to the topology; Logger to
	// the MQTT connections too.
	Logger      *slog.Logger
	Wall        streamclock.Wall
	DeadLetters topology.DeadLetterSink
	// WrapSource, if set, wraps the factory of every source, to watch
	// what the sources emit (statuspage.Tap.Source does).
	WrapSource func(topology.SourceFactory) topology.SourceFactory
	// Transport, if set, carries the edges into bolt instances across
	// processes (see edge.Transport); acking is then on.
	Transport edge.Transport
	// Incarnation is passed to the topology (topology.Config.Incarnation).
	Incarnation uint32
	// Lease, if set, wraps every instance of a source other than MQTT (a
	// recording), outside WrapSource, in a lease that lets one process of
	// a cluster run it.
	Lease func(name string, instance int, src topology.Source) topology.Source
	// LeaseLiveSource, if set, makes every instance of an MQTT source a lease
	// that lets one process of a cluster run it: open makes the
	// instance's source (wrapped by WrapSource) for a holding of the
	// lease, since a source runs once, with the function that ends its
	// connection, which outlives its Run, so that a worker letting the
	// lease go can leave the broker session to the next. Built.Run closes
	// every source open made. With a Transport, Build requires LeaseLiveSource
	// for MQTT sources, since instances with one client id on every
	// worker would take the broker session from each other.
	LeaseLiveSource func(name string, instance int, open func() (topology.Source, func() error)) topology.Source
	// Cluster, if set, is the pipeline's name in the cluster this process
	// is a worker of. Build then refuses what cannot run on a cluster
	// (see Pipeline.CheckCluster; with a Transport too), and an MQTT
	// source whose file gives no client id takes
	// sensorstorm-CLUSTER-NAME (suffixed with the instance's index as
	// usual), the same on every worker, so that the worker taking an
	// instance over resumes its broker session.
	Cluster string
	// Checkpoints, with a Transport, keeps the checkpoints of the units
	// (cluster.Worker's CheckpointStore): every instance the Transport
	// feeds checkpoints with those chained to it, every
	// Pipeline.Checkpoints.Interval (DefaultUnitCheckpointInterval if
	// unset), and restores its newest checkpoint wherever it starts.
	Checkpoints checkpoint.Partitioned
	// Worker, with Cluster, names this worker: an MQTT sink's client id
	// ends with it, since the workers running the sink's instances
	// connect at the same time, and a file sink writes the worker's own
	// file, out.w1.lp for out.lp, appending to it.
	Worker string
}

// setDefaults fills in what a pipeline made in Go may leave out, as a
// file does (one instance, shuffle grouping), and what depends on the
// whole pipeline: see docs/pipelines.md.
func (p *Pipeline) setDefaults() {
	for i := range p.Sources {
		if p.Sources[i].Parallelism == 0 {
			p.Sources[i].Parallelism = 1
		}
	}
	for i := range p.Bolts {
		b := &p.Bolts[i]
		if b.Parallelism == 0 {
			b.Parallelism = 1
		}
		for j := range b.Inputs {
			if b.Inputs[j].Grouping == "" {
				b.Inputs[j].Grouping = "shuffle"
			}
		}
	}
	if p.Live() {
		// MQTT sources learn from acking when a message can no longer be
		// lost.
		// Written only when it changes: a cluster's workers may build one
		// pipeline at once.
		if !p.ackingEnabledSet && !p.Acking.Enabled {
			p.Acking.Enabled = true
		}
		if p.Acking.MaxPending == 0 {
			p.Acking.MaxPending = DefaultMQTTMaxPending
		}
	}
}

// Check reports what Parse reports between components (names used
// twice, inputs from unknown components, cycles, MQTT client ids or
// spool directories shared), for a pipeline made in Go; files that
// cannot be read (recordings, TLS certificates and keys) and sink files
// that cannot be created (their directory is missing), with their place
// in the pipeline file; dir resolves relative paths, and defaults to the
// directory of the pipeline file. It does not connect to MQTT brokers.
// With Parse, it catches what Build would.
func (p *Pipeline) Check(dir string) error {
	dir = p.dir(dir)
	d := &decoder{file: p.File}
	d.check(p)
	var errs []error
	for _, e := range d.errs {
		errs = append(errs, e)
	}
	check := func(paths []string, what string, at pos) {
		for _, path := range paths {
			if path == "-" {
				continue
			}
			f, err := os.Open(resolve(dir, path))
			if err != nil {
				errs = append(errs, &Error{File: p.File, Line: at.line, Column: at.col, Err: fmt.Errorf("%s: %w", what, err)})
				continue
			}
			f.Close()
		}
	}
	for _, s := range p.Sources {
		what := fmt.Sprintf("source %q", s.Name)
		if p.Checkpoints.Dir != "" && s.MQTT != nil && s.MQTT.Mode != mqtt.ModeSpool {
			errs = append(errs, &Error{File: p.File, Line: s.pos.line, Column: s.pos.col,
				Err: fmt.Errorf("%s: checkpoints resume file, http and MQTT sources in mode spool only: this source does not record its position in them", what)})
		}
		switch {
		case s.File != nil:
			check(s.File.Paths, what, s.File.pos["paths"])
		case s.MQTT != nil:
			check(tlsFiles(&s.MQTT.ConnConfig), what, s.pos)
		}
	}
	for _, b := range p.Bolts {
		if b.Sink == nil && b.factory == nil {
			errs = append(errs, &Error{File: p.File, Line: b.pos.line, Column: b.pos.col,
				Err: fmt.Errorf("bolt %q: op %s: an operation's parameters come from a pipeline file (Parse); in Go, build the topology with package stream or topology", b.Name, b.Op)})
		}
		switch {
		case b.Sink == nil:
		case b.Sink.MQTT != nil:
			check(tlsFiles(&b.Sink.MQTT.ConnConfig), fmt.Sprintf("bolt %q", b.Name), b.pos)
		case b.Sink.Type == "file" && b.Sink.File != "-":
			out := filepath.Dir(resolve(dir, b.Sink.File))
			if st, err := os.Stat(out); err != nil || !st.IsDir() {
				errs = append(errs, &Error{File: p.File, Line: b.pos.line, Column: b.pos.col,
					Err: fmt.Errorf("bolt %q: sink file %s: no directory %s", b.Name, b.Sink.File, out)})
			}
		}
	}
	return errors.Join(errs...)
}

// dir returns the directory relative paths resolve against: dir, or the
// pipeline file's.
func (p *Pipeline) dir(dir string) string {
	if dir != "" {
		return dir
	}
	return filepath.Dir(p.File)
}

func resolve(dir, path string) string {
	if path == "-" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// Built is a pipeline built into a topology, ready to run. Its Run owns
// the run: it also closes the sources with connections or spools, which
// outlive the topology's Run so that trees completing while it drains are
// still acknowledged. Observers read the topology through Built, a
// topology.View.
type Built struct {
	topo *topology.Topology
	mu   sync.Mutex // guards what follows: Run makes sources
	// sources are closed by Run.
	sources []io.Closer
	replays map[string][]*replay.Source
	tables  map[string]*postgres.Sink // the PostgreSQL sinks by bolt
	// instances are the instances of the sources by name, the latest
	// holding of each for a leased source, nil where one is not made yet;
	// sinks the sinks by bolt.
	instances map[string][]any
	sinks     map[string]operation.Operation
}

// backlogged is a source whose input waits in a spool: *mqtt.Source, and
// any other source with the same method.
type backlogged interface {
	BacklogStats() (spool.BacklogStats, bool)
}

var _ backlogged = (*mqtt.Source)(nil)

// addInstance keeps src as the instance i of the source name.
func (b *Built) addInstance(name string, i int, src any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	srcs := b.instances[name]
	for len(srcs) <= i {
		srcs = append(srcs, nil)
	}
	srcs[i] = src
	b.instances[name] = srcs
}

// Instances returns the instances of the source name as far as they are
// made (nil for one not made yet; the latest holding of each for a source
// a cluster leases), or the sink of the bolt name, which its instances
// share; nil for other bolts. Observers look for the methods they read,
// such as BacklogStats or statuspage.Reporter's. It is safe to call while
// the pipeline runs.
func (b *Built) Instances(name string) []any {
	b.mu.Lock()
	defer b.mu.Unlock()
	if op, ok := b.sinks[name]; ok {
		return []any{op}
	}
	return slices.Clone(b.instances[name])
}

// BacklogStats returns what waits in the spools of the source name for
// the pipeline, summed over its instances (the oldest of their oldest,
// the longest catch-up of those shrinking; Full if any is), and false if
// it has no instance with a backlog yet.
func (b *Built) BacklogStats(name string) (spool.BacklogStats, bool) {
	var sum spool.BacklogStats
	found := false
	for _, inst := range b.Instances(name) {
		src, ok := inst.(backlogged)
		if !ok {
			continue
		}
		st, ok := src.BacklogStats()
		if !ok {
			continue
		}
		found = true
		sum.Records += st.Records
		sum.Bytes += st.Bytes
		if st.Oldest != 0 && (sum.Oldest == 0 || st.Oldest < sum.Oldest) {
			sum.Oldest = st.Oldest
		}
		sum.OnDisk += st.OnDisk
		sum.ReadBack += st.ReadBack
		sum.Full = sum.Full || st.Full
		sum.DrainRate += st.DrainRate
		sum.AddRate += st.AddRate
		sum.CatchUp = max(sum.CatchUp, st.CatchUp)
	}
	return sum, found
}

var _ topology.View = (*Built)(nil)

// Components implements topology.View.
func (b *Built) Components() []string { return b.topo.Components() }

// Stats implements topology.View.
func (b *Built) Stats(name string) *topology.ComponentStats { return b.topo.Stats(name) }

// Graph implements topology.View.
func (b *Built) Graph() topology.Graph { return b.topo.Graph() }

// AckStats implements topology.View.
func (b *Built) AckStats() topology.AckStats { return b.topo.AckStats() }

// StreamTime implements topology.View.
func (b *Built) StreamTime() (int64, bool) { return b.topo.StreamTime() }

// Checkpoints implements topology.View.
func (b *Built) Checkpoints() topology.CheckpointStats { return b.topo.Checkpoints() }

// ReplayStatus returns the progress of the source name if it replays
// files, summed over its instances, and false otherwise. Its Read,
// Skipped and Outside count records, which the topology's figures do not.
func (b *Built) ReplayStatus(name string) (replay.Status, bool) {
	b.mu.Lock()
	srcs, ok := b.replays[name]
	b.mu.Unlock()
	var sum replay.Status
	for _, src := range srcs {
		st := src.Status()
		sum.Read += st.Read
		sum.Emitted += st.Emitted
		sum.Invalid += st.Invalid
		sum.Skipped += st.Skipped
		sum.Outside += st.Outside
	}
	return sum, ok
}

// PostgresStats returns the counters of the bolt name's PostgreSQL sink,
// and false if it has none. Its Duplicates are points the sink dropped
// because they changed nothing in the table.
func (b *Built) PostgresStats(name string) (*postgres.Stats, bool) {
	t, ok := b.tables[name]
	if !ok {
		return nil, false
	}
	return t.Stats(), true
}

// Run runs the topology until its sources end (recordings) or ctx is
// cancelled (MQTT feeds run until then), then disconnects the MQTT sources
// and closes their spools.
func (b *Built) Run(ctx context.Context) error {
	err := b.topo.Run(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.sources {
		err = errors.Join(err, s.Close())
	}
	return err
}

// Build checks the files and returns the pipeline's topology, ready to
// Run. Sinks writing to files open them here; Run closes them. Nothing
// connects to an MQTT broker before Run. A pipeline made in Go rather
// than parsed gets the defaults Parse gives, filled in here.
func (p *Pipeline) Build(opts Options) (*Built, error) {
	p.setDefaults()
	opts.Dir = p.dir(opts.Dir)
	if err := p.Check(opts.Dir); err != nil {
		return nil, err
	}
	if opts.Cluster != "" || opts.Transport != nil {
		if err := p.CheckCluster(); err != nil {
			return nil, err
		}
	}
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	acking := p.Acking
	if opts.Transport != nil {
		acking.Enabled = true
	}
	cfg := topology.Config{
		Replay: !p.Live(), Acking: acking, Logger: opts.Logger, Wall: opts.Wall, DeadLetters: opts.DeadLetters,
		Transport: opts.Transport, Incarnation: opts.Incarnation,
	}
	if opts.Transport != nil && opts.Checkpoints != nil {
		interval := p.Checkpoints.Interval
		if interval == 0 {
			interval = DefaultUnitCheckpointInterval
		}
		cfg.Checkpoints = topology.CheckpointConfig{Store: opts.Checkpoints, Interval: interval}
	}
	if p.Checkpoints.Dir != "" {
		if opts.Transport != nil {
			return nil, fmt.Errorf("pipeline: checkpoints: dir %s: %w", p.Checkpoints.Dir, ErrCheckpointsInCluster)
		}
		store, err := checkpoint.OpenDir(resolve(opts.Dir, p.Checkpoints.Dir))
		if err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
		cfg.Checkpoints = topology.CheckpointConfig{Store: store, Interval: p.Checkpoints.Interval}
	}
	built := &Built{replays: map[string][]*replay.Source{}, tables: map[string]*postgres.Sink{},
		instances: map[string][]any{}, sinks: map[string]operation.Operation{}}
	// env.opened is what a failed build closes: MQTT sources (their
	// spools) and sink files.
	env := &buildEnv{opts: opts, built: built, checkpoints: p.Checkpoints.Dir != ""}
	fail := func(err error) (*Built, error) {
		for _, c := range env.opened {
			c.Close()
		}
		return nil, err
	}
	type source struct {
		factory topology.SourceFactory
		cfg     topology.SourceConfig
	}
	sources := make([]source, len(p.Sources))
	for i := range p.Sources {
		s := &p.Sources[i]
		t, _ := sourceTypes.get(s.Type)
		scfg := topology.SourceConfig{Parallelism: s.Parallelism}
		factory, err := t.build(s, env, &scfg)
		if err != nil {
			return fail(&Error{File: p.File, Line: s.pos.line, Column: s.pos.col, Err: fmt.Errorf("source %q: %w", s.Name, err)})
		}
		leased := t.feed && opts.LeaseLiveSource != nil
		if opts.WrapSource != nil && !leased {
			factory = opts.WrapSource(factory)
		}
		if lease := opts.Lease; lease != nil && !t.feed {
			inner, name := factory, s.Name
			factory = func(i int) topology.Source { return lease(name, i, inner(i)) }
		}
		sources[i] = source{factory, scfg}
	}
	if replays := slices.Collect(maps.Values(built.replays)); len(replays) == 1 && len(replays[0]) == 1 && opts.Lease == nil {
		// A replay that paces itself is its run's stream clock: windows
		// close at its pace, between its records too.
		cfg.Clock = replays[0][0]
	}
	topo, err := topology.New(cfg)
	if err != nil {
		return fail(fmt.Errorf("pipeline: %w", err))
	}
	built.topo = topo
	for i, s := range sources {
		topo.AddSource(p.Sources[i].Name, s.factory, s.cfg)
	}
	for _, b := range p.Bolts {
		f := b.factory
		if b.Sink != nil {
			t, _ := sinkTypes.get(b.Sink.Type)
			op, c, err := t.open(b.Sink, b.Name, opts)
			if err != nil {
				return fail(&Error{File: p.File, Line: b.pos.line, Column: b.pos.col, Err: fmt.Errorf("bolt %q: %w", b.Name, err)})
			}
			if c != nil {
				env.opened = append(env.opened, c)
			}
			if t, ok := op.(*postgres.Sink); ok {
				built.tables[b.Name] = t
			}
			built.sinks[b.Name] = op
			// The engine closes an operation its instances share once,
			// after the last of them.
			f = operation.Stateless(op)
		}
		bolt := topo.AddBolt(b.Name, f, topology.BoltConfig{Parallelism: b.Parallelism, Buffer: b.Buffer})
		for _, in := range b.Inputs {
			g, _ := groupingTypes.get(in.Grouping)
			bolt.InputStream(in.From, in.Stream, g.make(in.Fields))
		}
	}
	return built, nil
}

// leasedMQTTSource returns the factory of an MQTT source whose instances
// a cluster leases (Options.LeaseLiveSource): each holding of an instance runs a
// source of its own, which built closes at the end.
func leasedMQTTSource(s *Source, opts Options, built *Built) (topology.SourceFactory, error) {
	cfgs := mqttSourceConfigs(s, opts.Dir, opts.Cluster, opts.Logger, false)
	for _, c := range cfgs {
		// Neither connects nor opens anything: it checks c.
		if _, err := mqtt.NewSource(c); err != nil {
			return nil, err
		}
	}
	return func(i int) topology.Source {
		return opts.LeaseLiveSource(s.Name, i, func() (topology.Source, func() error) {
			src := accepted(mqtt.NewSource(cfgs[i]))
			built.mu.Lock()
			built.sources = append(built.sources, src)
			built.mu.Unlock()
			built.addInstance(s.Name, i, src)
			if opts.WrapSource == nil {
				return src, src.Close
			}
			return opts.WrapSource(topology.Single(src))(i), src.Close
		})
	}, nil
}

// httpSource returns an http source, its state directory resolved against
// opts.Dir, that records positions if the run takes checkpoints.
func httpSource(s *Source, opts Options, checkpoints bool) (*httpwrite.Source, error) {
	cfg := *s.HTTP
	cfg.StateDir = resolve(opts.Dir, cfg.StateDir)
	cfg.Checkpoints = checkpoints
	cfg.Logger = opts.Logger
	cfg.Spool.Logger = opts.Logger
	return httpwrite.NewSource(cfg)
}

// mqttSources returns the instances of an MQTT source.
func mqttSources(s *Source, opts Options, checkpoints bool) ([]*mqtt.Source, error) {
	var srcs []*mqtt.Source
	for _, cfg := range mqttSourceConfigs(s, opts.Dir, opts.Cluster, opts.Logger, checkpoints) {
		src, err := mqtt.NewSource(cfg)
		if err != nil {
			for _, s := range srcs {
				s.Close()
			}
			return nil, err
		}
		srcs = append(srcs, src)
	}
	return srcs, nil
}

// workerPath returns the path of worker's file for a file sink's path on
// a cluster: the worker's name inserted before the extension, out.lp
// becoming out.w1.lp (out becoming out.w1), so that no two workers write
// one file.
func workerPath(path, worker string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + worker + ext
}

// mqttSinkConfig returns the configuration of the MQTT sink of bolt name,
// paths resolved against opts.Dir; on a cluster, its client id is this
// worker's.
func mqttSinkConfig(c *mqtt.SinkConfig, name string, opts Options) mqtt.SinkConfig {
	cfg := *c
	if opts.Cluster != "" && opts.Worker != "" {
		cfg.ClientID += "-" + opts.Worker
	}
	resolveConn(&cfg.ConnConfig, opts.Dir, opts.Logger, name)
	return cfg
}
