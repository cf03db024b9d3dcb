package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/ops"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
)

// sourceName is the name of a Stream's source in its topology.
const sourceName = "source"

// Stream is a chain from one source: declare it with From and the methods
// after it, then Build or Run it once. Each method returns the Stream, so
// that calls chain; a problem is kept, and Build returns every one.
type Stream struct {
	src         topology.Source
	outOfOrder  time.Duration
	key         []string
	parallelism int
	tail        string // what the next step reads
	bolts       []bolt
	kinds       map[string]int // bolts declared per kind, to number them
	errs        []error
}

// bolt is a bolt Build adds, reading tail with grouping.
type bolt struct {
	name, from  string
	factory     operation.Factory
	open        func() (*file.Sink, error) // instead of factory: a file opened by Build
	parallelism int
	grouping    topology.Grouping
}

// From starts a chain reading src. A src that is a streamclock.Clock, as
// a connectors/replay Source is, replays a recording at its own pace: Build
// makes it the run's stream clock and the run a replay (topology.Config's
// Clock and Replay). Any other source runs live unless the Config given to
// Build says Replay, as it should for a connectors/file Source.
func From(src topology.Source) *Stream {
	s := &Stream{src: src, parallelism: 1, tail: sourceName, kinds: map[string]int{}}
	if src == nil {
		s.errs = append(s.errs, errors.New("stream: From: nil source"))
	}
	return s
}

// OutOfOrder says how far behind the newest reading the source's readings
// may arrive and still be taken in event-time order: the synchronization
// window of the bolts reading the source (syncbuffer.Config.Window). A
// reading later than that is dropped and counted as late (the Late figure
// of the first step). Defaults to 0: readings are taken in the order they
// come.
func (s *Stream) OutOfOrder(d time.Duration) *Stream {
	if d < 0 {
		s.fail("OutOfOrder", fmt.Errorf("negative window %v", d))
	}
	s.outOfOrder = d
	return s
}

// KeyBy keys the steps that follow by the named tags (or fields): each key
// goes to one instance of a step (topology.Fields), each window step
// computes a window per key, and its results carry the key's tags, so the
// stream stays keyed by them.
func (s *Stream) KeyBy(names ...string) *Stream {
	if len(names) == 0 {
		s.fail("KeyBy", errors.New("no names"))
	}
	s.key = names
	return s
}

// Parallelism sets the number of instances of the keyed steps that follow.
// Unkeyed steps and sinks have one instance. Defaults to 1.
func (s *Stream) Parallelism(n int) *Stream {
	if n < 1 {
		s.fail("Parallelism", fmt.Errorf("%d instances: want 1 or more", n))
	}
	s.parallelism = n
	return s
}

// Filter keeps the particles for which keep returns true. keep must not
// modify the particle, whose slices other steps share.
func (s *Stream) Filter(keep func(p *particle.Particle) bool) *Stream {
	if keep == nil {
		s.fail("Filter", errors.New("nil function"))
		return s
	}
	return s.step("filter", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
		if keep(&in) {
			out.Emit(in)
		}
		return nil
	})))
}

// Window computes aggs over windows w, per key when the stream is keyed:
// one particle per window and key, stamped with the window's end, with
// the key's tags and a field per field and aggregation
// (ops.NewStats). The aggregations must name the same fields.
func (s *Stream) Window(w Windows, aggs ...Aggregation) *Stream {
	cfg, err := statsConfig(w, aggs, s.key)
	if err != nil {
		s.fail("Window", err)
		return s
	}
	f, err := operation.FactoryOf(ops.NewStats, cfg)
	if err != nil {
		s.fail("Window", fmt.Errorf("%v: %w", w, err))
		return s
	}
	return s.step("window", f)
}

// Align merges the readings of the sensors, told apart by the key, into
// one particle per time bucket, with a field sensor_field per sensor and
// field (ops.NewAlign); fields limits the fields merged. The stream
// must be keyed, and is no longer keyed after: a bucket holds every
// sensor.
func (s *Stream) Align(bucket time.Duration, fields ...string) *Stream {
	if len(s.key) == 0 {
		s.fail("Align", errors.New("the stream is not keyed: call KeyBy with the tags that name a sensor first"))
		return s
	}
	f, err := operation.FactoryOf(ops.NewAlign, ops.AlignConfig{Bucket: bucket, Sensor: s.key, Fields: fields})
	if err != nil {
		s.fail("Align", err)
		return s
	}
	s.key = nil
	return s.step("align", f)
}

// Process adds a step running the operations f makes, one per instance.
func (s *Stream) Process(f operation.Factory) *Stream {
	if f == nil {
		s.fail("Process", errors.New("nil factory"))
		return s
	}
	return s.step("process", f)
}

// ForEach calls fn with every particle of the stream, one at a time, in
// event-time order. fn must not modify the particle's slices.
func (s *Stream) ForEach(fn func(p particle.Particle)) *Stream {
	if fn == nil {
		s.fail("ForEach", errors.New("nil function"))
		return s
	}
	return s.sink("foreach", operation.Func(func(_ context.Context, in particle.Particle, _ operation.Emitter) error {
		fn(in)
		return nil
	}))
}

// To sends the stream to sink, such as a connectors/mqtt Sink, in one
// instance. A sink that is an io.Closer is closed at the end of the run.
func (s *Stream) To(sink operation.Operation) *Stream {
	if sink == nil {
		s.fail("To", errors.New("nil sink"))
		return s
	}
	return s.sink("sink", sink)
}

// WriteLines writes the stream to w as line protocol, timestamps at
// precision prec. w is not closed.
func (s *Stream) WriteLines(w io.Writer, prec particle.Precision) *Stream {
	if w == nil {
		s.fail("WriteLines", errors.New("nil writer"))
		return s
	}
	return s.sink("lines", file.NewSink(w, prec))
}

// ToFile writes the stream to the file at path as line protocol, as
// file.OpenSink does with cfg: Build opens the file, the end of the run
// closes it.
func (s *Stream) ToFile(path string, cfg file.SinkConfig) *Stream {
	s.tailBolt("file", nil).open = func() (*file.Sink, error) { return file.OpenSink(path, cfg) }
	return s
}

// step adds a bolt reading the tail, keyed if the stream is, and makes it
// the tail.
func (s *Stream) step(kind string, f operation.Factory) *Stream {
	b := s.tailBolt(kind, f)
	if s.key != nil {
		b.parallelism, b.grouping = s.parallelism, topology.Fields(s.key...)
	}
	s.tail = b.name
	return s
}

// sink adds a bolt of one instance reading the tail, which stays the tail.
func (s *Stream) sink(kind string, op operation.Operation) *Stream {
	s.tailBolt(kind, operation.Stateless(op))
	return s
}

// tailBolt declares a bolt of kind reading the tail, in one instance, and
// returns it.
func (s *Stream) tailBolt(kind string, f operation.Factory) *bolt {
	s.kinds[kind]++
	name := kind
	if n := s.kinds[kind]; n > 1 {
		name = fmt.Sprintf("%s-%d", kind, n)
	}
	s.bolts = append(s.bolts, bolt{name: name, from: s.tail, factory: f, parallelism: 1, grouping: topology.Global()})
	return &s.bolts[len(s.bolts)-1]
}

// fail keeps a problem of the call named call, to return from Build.
func (s *Stream) fail(call string, err error) {
	s.errs = append(s.errs, fmt.Errorf("stream: %s: %w", call, err))
}

// Build returns the topology of the chain, ready to Run, configured by
// cfg, or every problem of the chain, joined. When the source is a
// streamclock.Clock and cfg.Clock is nil, the source is the run's clock
// and the run a replay. Build is called once: a Stream's source runs once.
func (s *Stream) Build(cfg topology.Config) (*topology.Topology, error) {
	if len(s.bolts) == 0 {
		s.errs = append(s.errs, errors.New("stream: nothing reads the source: add a step or a sink"))
	}
	if len(s.errs) > 0 {
		return nil, errors.Join(s.errs...)
	}
	if clock, ok := s.src.(streamclock.Clock); ok && cfg.Clock == nil {
		cfg.Clock, cfg.Replay = clock, true
	}
	topo, err := topology.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	var opened []io.Closer // files a failed Build closes
	for i := range s.bolts {
		b := &s.bolts[i]
		if b.open == nil {
			continue
		}
		sink, err := b.open()
		if err != nil {
			for _, c := range opened {
				c.Close()
			}
			return nil, fmt.Errorf("stream: ToFile: %w", err)
		}
		opened = append(opened, sink)
		b.factory = operation.Stateless(sink)
	}
	topo.AddSource(sourceName, topology.Single(s.src), topology.SourceConfig{})
	for _, b := range s.bolts {
		bc := topology.BoltConfig{Parallelism: b.parallelism}
		if b.from == sourceName {
			bc.Buffer.Window = s.outOfOrder
		}
		topo.AddBolt(b.name, b.factory, bc).Input(b.from, b.grouping)
	}
	return topo, nil
}

// Run builds the chain with the default topology.Config and runs it until
// the source ends, or until ctx is cancelled and the run has drained. It
// returns Build's error or the run's.
func (s *Stream) Run(ctx context.Context) error {
	topo, err := s.Build(topology.Config{})
	if err != nil {
		return err
	}
	return topo.Run(ctx)
}
