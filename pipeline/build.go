package pipeline

import (
	"context"
	"errors"
	"fmt"
	"github.com/sensorstorm/sensorstorm/checkpoint"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/postgres"
	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Options are what Build takes from its caller rather than from the file.
type Options struct {
	// Dir is the directory relative paths are resolved against. Defaults
	// to the directory of the pipeline file.
	Dir string
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
	// processes (see topology.Transport); acking is then on.
	Transport topology.Transport
	// Incarnation is passed to the topology (topology.Config.Incarnation).
	Incarnation uint32
	// Lease, if set, wraps every instance of a source other than MQTT (a
	// recording), outside WrapSource, in a lease that lets one process of
	// a cluster run it.
	Lease func(name string, instance int, src topology.Source) topology.Source
	// LeaseFeed, if set, makes every instance of an MQTT source a lease
	// that lets one process of a cluster run it: open makes the
	// instance's source (wrapped by WrapSource) for a holding of the
	// lease, since a source runs once, with the function that ends its
	// connection, which outlives its Run, so that a worker letting the
	// lease go can leave the broker session to the next. Built.Run closes
	// every source open made. With a Transport, Build requires LeaseFeed
	// for MQTT sources, since instances with one client id on every
	// worker would take the broker session from each other.
	LeaseFeed func(name string, instance int, open func() (topology.Source, func() error)) topology.Source
	// Cluster, if set, is the pipeline's name in the cluster this process
	// is a worker of. Build then refuses what cannot run on a cluster
	// (see Pipeline.CheckCluster; with a Transport too), and an MQTT
	// source whose file gives no client id takes
	// sensorstorm-CLUSTER-NAME (suffixed with the instance's index as
	// usual), the same on every worker, so that the worker taking an
	// instance over resumes its broker session.
	Cluster string
	// Worker, with Cluster, names this worker: an MQTT sink's client id
	// ends with it, since the workers running the sink's instances
	// connect at the same time, and a file sink writes the worker's own
	// file, out.w1.lp for out.lp, appending to it.
	Worker string
}

// setDefaults fills in what depends on the whole pipeline: see the
// package documentation.
func (p *Pipeline) setDefaults() {
	if p.Live() {
		// MQTT sources learn from acking when a message can no longer be
		// lost.
		if !p.ackingEnabledSet {
			p.Acking.Enabled = true
		}
		if p.Acking.MaxPending == 0 {
			p.Acking.MaxPending = DefaultMQTTMaxPending
		}
	}
}

// Check reports files that cannot be read (recordings, TLS certificates
// and keys) and sink files that cannot be created (their directory is
// missing), with their place in the pipeline file; dir resolves relative
// paths, and defaults to the directory of the pipeline file. It does not
// connect to MQTT brokers. With Parse, it catches what Build would.
func (p *Pipeline) Check(dir string) error {
	dir = p.dir(dir)
	var errs []error
	check := func(paths []string, what string, at pos) {
		for _, path := range paths {
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
		if p.Checkpoints.Dir != "" && (s.HTTP != nil || (s.MQTT != nil && s.MQTT.Mode != mqtt.ModeSpool)) {
			errs = append(errs, &Error{File: p.File, Line: s.pos.line, Column: s.pos.col,
				Err: fmt.Errorf("%s: checkpoints resume file sources and MQTT sources in mode spool only: this source does not record its position in them", what)})
		}
		switch {
		case s.File != nil:
			check(s.File.Paths, what, s.File.pos["paths"])
		case s.MQTT != nil:
			check(tlsFiles(&s.MQTT.ConnConfig), what, s.pos)
		}
	}
	for _, b := range p.Bolts {
		switch {
		case b.Sink == nil:
		case b.Sink.MQTT != nil:
			check(tlsFiles(&b.Sink.MQTT.ConnConfig), fmt.Sprintf("bolt %q", b.Name), b.pos)
		case b.Sink.File != "-":
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
	// backlogs are the instances of the spooled sources by name, the
	// latest holding of each for a leased source; nil where an instance
	// has none.
	backlogs map[string][]backlogged
}

// backlogged is a source whose input waits in a spool: *mqtt.Source, and
// any other source with the same method.
type backlogged interface {
	BacklogStats() (spool.BacklogStats, bool)
}

var _ backlogged = (*mqtt.Source)(nil)

// addBacklog keeps src as the instance i of the source name if it has a
// backlog to report.
func (b *Built) addBacklog(name string, i int, src any) {
	bl, ok := src.(backlogged)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	srcs := b.backlogs[name]
	for len(srcs) <= i {
		srcs = append(srcs, nil)
	}
	srcs[i] = bl
	b.backlogs[name] = srcs
}

// BacklogStats returns what waits in the spools of the source name for
// the pipeline, summed over its instances (the oldest of their oldest,
// the longest catch-up of those shrinking; Full if any is), and false if
// it has no instance with a backlog yet.
func (b *Built) BacklogStats(name string) (spool.BacklogStats, bool) {
	b.mu.Lock()
	srcs := b.backlogs[name]
	b.mu.Unlock()
	var sum spool.BacklogStats
	found := false
	for _, src := range srcs {
		if src == nil {
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
// connects to an MQTT broker before Run.
func (p *Pipeline) Build(opts Options) (*Built, error) {
	opts.Dir = p.dir(opts.Dir)
	if err := p.Check(opts.Dir); err != nil {
		return nil, err
	}
	if opts.Cluster != "" || opts.Transport != nil {
		if err := p.CheckCluster(); err != nil {
			return nil, err
		}
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
	if p.Checkpoints.Dir != "" {
		if opts.Transport != nil {
			return nil, fmt.Errorf("pipeline: checkpoints: %w", ErrCheckpointsInCluster)
		}
		store, err := checkpoint.OpenDir(resolve(opts.Dir, p.Checkpoints.Dir))
		if err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
		cfg.Checkpoints = topology.CheckpointConfig{Store: store, Interval: p.Checkpoints.Interval}
	}
	topo, err := topology.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	built := &Built{topo: topo, replays: map[string][]*replay.Source{}, tables: map[string]*postgres.Sink{}, backlogs: map[string][]backlogged{}}
	// opened is what a failed build closes: MQTT sources (their spools)
	// and sink files.
	var opened []io.Closer
	fail := func(err error) (*Built, error) {
		for _, c := range opened {
			c.Close()
		}
		return nil, err
	}
	for i := range p.Sources {
		s := &p.Sources[i]
		var factory topology.SourceFactory
		leased := s.MQTT != nil && opts.LeaseFeed != nil
		switch {
		case s.File != nil:
			factory, err = fileSource(s, opts.Dir, built)
		case leased:
			factory, err = leasedMQTTSource(s, opts, built)
		case s.MQTT != nil && opts.Transport != nil:
			err = errors.New("an MQTT source of a cluster needs a lease (Options.LeaseFeed)")
		case s.MQTT != nil:
			var srcs []*mqtt.Source
			srcs, err = mqttSources(s, opts, p.Checkpoints.Dir != "")
			for i, src := range srcs {
				built.sources = append(built.sources, src)
				built.addBacklog(s.Name, i, src)
				opened = append(opened, src)
			}
			factory = func(i int) topology.Source { return srcs[i] }
		case s.HTTP != nil:
			var src *httpwrite.Source
			src, err = httpSource(s, opts)
			if err == nil {
				built.sources = append(built.sources, src)
				built.addBacklog(s.Name, 0, src)
				opened = append(opened, src)
				factory = topology.Single(src)
			}
		}
		if err != nil {
			return fail(&Error{File: p.File, Line: s.pos.line, Column: s.pos.col, Err: fmt.Errorf("source %q: %w", s.Name, err)})
		}
		if opts.WrapSource != nil && !leased {
			factory = opts.WrapSource(factory)
		}
		if lease := opts.Lease; lease != nil && s.MQTT == nil {
			inner, name := factory, s.Name
			factory = func(i int) topology.Source { return lease(name, i, inner(i)) }
		}
		scfg := topology.SourceConfig{Parallelism: s.Parallelism}
		if s.HTTP != nil {
			// The engine judges the lines the source answered for by the
			// same bound, so that it never drops one answered 204.
			scfg.FutureBound = s.HTTP.FutureBound
		}
		topo.AddSource(s.Name, factory, scfg)
	}
	for _, b := range p.Bolts {
		f := b.factory
		if b.Sink != nil {
			op, c, err := openSink(b.Sink, b.Name, opts)
			if err != nil {
				return fail(&Error{File: p.File, Line: b.pos.line, Column: b.pos.col, Err: fmt.Errorf("bolt %q: %w", b.Name, err)})
			}
			if c != nil {
				opened = append(opened, c)
			}
			if t, ok := op.(*postgres.Sink); ok {
				built.tables[b.Name] = t
			}
			// The engine closes an operation its instances share once,
			// after the last of them.
			f = operation.Stateless(op)
		}
		bolt := topo.AddBolt(b.Name, f, topology.BoltConfig{Parallelism: b.Parallelism, Buffer: b.Buffer})
		for _, in := range b.Inputs {
			bolt.InputStream(in.From, in.Stream, grouping(in))
		}
	}
	return built, nil
}

// fileSource returns the factory of a source replaying recordings, which
// keeps the sources it makes in built.
func fileSource(s *Source, dir string, built *Built) (topology.SourceFactory, error) {
	cfg := replay.Config{Speed: s.File.Speed, Concat: len(s.File.Paths) == 1}
	for _, path := range s.File.Paths {
		path = resolve(dir, path)
		format := s.File.Format
		if s.File.MaxLineLength != 0 {
			f := file.Detect(path)
			if format != nil {
				f = *format
			}
			f.MaxLineLength = s.File.MaxLineLength
			format = &f
		}
		cfg.Inputs = append(cfg.Inputs, replay.Input{Path: path, Format: format})
	}
	if _, err := replay.New(cfg); err != nil {
		return nil, err
	}
	return func(int) topology.Source {
		src := accepted(replay.New(cfg))
		built.mu.Lock()
		defer built.mu.Unlock()
		built.replays[s.Name] = append(built.replays[s.Name], src)
		return src
	}, nil
}

// leasedMQTTSource returns the factory of an MQTT source whose instances
// a cluster leases (Options.LeaseFeed): each holding of an instance runs a
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
		return opts.LeaseFeed(s.Name, i, func() (topology.Source, func() error) {
			src := accepted(mqtt.NewSource(cfgs[i]))
			built.mu.Lock()
			built.sources = append(built.sources, src)
			built.mu.Unlock()
			built.addBacklog(s.Name, i, src)
			if opts.WrapSource == nil {
				return src, src.Close
			}
			return opts.WrapSource(topology.Single(src))(i), src.Close
		})
	}, nil
}

// httpSource returns an http source, its state directory resolved against
// opts.Dir.
func httpSource(s *Source, opts Options) (*httpwrite.Source, error) {
	cfg := *s.HTTP
	cfg.StateDir = resolve(opts.Dir, cfg.StateDir)
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

// openSink returns a sink's operation and, for a file, what to close if
// the build fails: for "-" a sink on standard output (never closed), else
// a sink on the file, created, and truncated at its first write unless a
// restore from a checkpoint came first, which closes it; or an MQTT
// publisher or a PostgreSQL or InfluxDB writer, which connect when Run
// starts. On a cluster, a file sink writes the file of this worker
// (workerPath) and appends to it: a worker started again under the same
// name goes on with its file, and no worker truncates another's.
func openSink(s *Sink, name string, opts Options) (operation.Operation, io.Closer, error) {
	if s.InfluxDB != nil {
		cfg := *s.InfluxDB
		if cfg.Logger == nil {
			cfg.Logger = opts.Logger
		}
		sink, err := influxdb.NewSink(cfg)
		return sink, nil, err
	}
	if s.Postgres != nil {
		cfg := *s.Postgres
		if cfg.Logger == nil {
			cfg.Logger = opts.Logger
		}
		sink, err := postgres.NewSink(cfg)
		return sink, nil, err
	}
	if s.MQTT != nil {
		sink, err := mqtt.NewSink(mqttSinkConfig(s.MQTT, name, opts))
		return sink, nil, err
	}
	path := resolve(opts.Dir, s.File)
	if path == "-" {
		return file.NewSink(opts.Stdout, s.Precision), nil, nil
	}
	cfg := file.SinkConfig{Precision: s.Precision}
	if opts.Cluster != "" && opts.Worker != "" {
		path, cfg.Append = workerPath(path, opts.Worker), true
		if opts.Logger != nil {
			opts.Logger.Info("file sink on a cluster: this worker appends to a file of its own", "component", name, "path", path)
		}
	}
	sink, err := file.OpenSink(path, cfg)
	if err != nil {
		return nil, nil, err
	}
	return sink, sink, nil
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

func grouping(in Input) topology.Grouping {
	switch in.Grouping {
	case "fields":
		return topology.Fields(in.Fields...)
	case "global":
		return topology.Global()
	case "all":
		return topology.All()
	}
	return topology.Shuffle()
}
