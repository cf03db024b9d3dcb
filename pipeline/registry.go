package pipeline

import (
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// registry holds the types of one kind of component that pipeline files
// can name: the built-ins, then those registered, in that order. It is
// safe for concurrent use.
type registry[T any] struct {
	kind string // "source type", in messages
	// reserved are the keys beside the type's in a component's mapping,
	// which no type may take.
	reserved []string
	mu       sync.RWMutex
	names    []string
	types    map[string]T
}

// builtin is a type a registry starts with.
type builtin[T any] struct {
	name string
	t    T
}

func newRegistry[T any](kind string, reserved []string, builtins ...builtin[T]) *registry[T] {
	r := &registry[T]{kind: kind, reserved: reserved, types: map[string]T{}}
	for _, b := range builtins {
		r.add("", b.name, b.t)
	}
	return r
}

// add registers t as name; it panics, naming caller, if name is empty,
// taken or reserved.
func (r *registry[T]) add(caller, name string, t T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, taken := r.types[name]; taken || name == "" || slices.Contains(r.reserved, name) {
		panic(fmt.Sprintf("pipeline: %s: %s %q empty, taken or reserved", caller, r.kind, name))
	}
	r.names = append(r.names, name)
	r.types[name] = t
}

func (r *registry[T]) get(name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.types[name]
	return t, ok
}

// list returns the names, built-ins first, in the order registered.
func (r *registry[T]) list() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]string(nil), r.names...)
}

// oneOf lists names for a message: "a, b and c" with and, "a, b or c"
// with or.
func oneOf(names []string, and string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + and + " " + names[len(names)-1]
}

// sourceType is a kind of source, named in a pipeline file by the key of
// its mapping in the source.
type sourceType struct {
	// decode decodes the mapping n of source s; what names s in messages.
	decode func(d *decoder, n *yaml.Node, what string, s *Source)
	// build returns the factory of s's instances; it may adjust scfg.
	build func(s *Source, env *buildEnv, scfg *topology.SourceConfig) (topology.SourceFactory, error)
	// live makes a pipeline with such a source run live (Pipeline.Live).
	live bool
	// feed tells that a cluster leases the instances through
	// Options.LeaseLiveSource, which wraps them itself, rather than through
	// Options.Lease.
	feed bool
}

// buildEnv is what a source type builds with.
type buildEnv struct {
	opts        Options
	built       *Built
	checkpoints bool
	// opened is what a failed Build closes.
	opened []io.Closer
}

// sinkType is a kind of sink, named in a pipeline file by the key of its
// mapping in the sink.
type sinkType struct {
	// decode decodes the mapping n of the sink s of bolt name; prec is the
	// sink's precision when it gives one.
	decode func(d *decoder, n *yaml.Node, what, name string, prec *particle.Precision, s *Sink)
	// open returns the operation of s and what a failed Build closes.
	open func(s *Sink, name string, opts Options) (operation.Operation, io.Closer, error)
}

// groupingType is a grouping pipelines can name.
type groupingType struct {
	// fields tells that it takes the fields of its input.
	fields bool
	// make returns the grouping of an input.
	make func(fields []string) topology.Grouping
}

// The types pipelines can name: the built-ins, and those registered.
var (
	sourceTypes = newRegistry("source type", []string{"name", "parallelism"},
		builtin[sourceType]{"file", fileSourceType},
		builtin[sourceType]{"mqtt", mqttSourceType},
		builtin[sourceType]{"http", httpSourceType},
	)
	sinkTypes = newRegistry("sink type", []string{"precision", "append"},
		builtin[sinkType]{"file", fileSinkType},
		builtin[sinkType]{"mqtt", mqttSinkType},
		builtin[sinkType]{"postgres", postgresSinkType},
		builtin[sinkType]{"influxdb", influxSinkType},
	)
	groupingTypes = newRegistry("grouping", nil,
		builtin[groupingType]{"shuffle", groupingType{make: func([]string) topology.Grouping { return topology.Shuffle() }}},
		builtin[groupingType]{"fields", groupingType{fields: true, make: func(f []string) topology.Grouping { return topology.Fields(f...) }}},
		builtin[groupingType]{"global", groupingType{make: func([]string) topology.Grouping { return topology.Global() }}},
		builtin[groupingType]{"all", groupingType{make: func([]string) topology.Grouping { return topology.All() }}},
		builtin[groupingType]{"forward", groupingType{make: func([]string) topology.Grouping { return topology.Forward() }}},
	)
)

// RegisterSource makes the source type name available to pipeline files,
// like file, mqtt and http: a source's mapping under the key name is
// decoded into a C, a struct, by its yaml tags, and newSource makes each of the
// source's instances from it when the pipeline is built. If *C has a
// method Validate() error, parsing calls it, so that a bad config is
// reported at its place in the file. A source that is an io.Closer is
// closed at the end of the run. A pipeline with a registered source runs
// live (Pipeline.Live); one that takes checkpoints needs the source's
// instances to be topology.Positioners, which resume from a position of
// their own. RegisterSource panics if name is empty, taken, or
// a key of every source (name, parallelism); call it before parsing, as
// from an init function.
func RegisterSource[C any](name string, newSource func(C) (topology.Source, error)) {
	sourceTypes.add("RegisterSource", name, sourceType{
		decode: func(d *decoder, n *yaml.Node, what string, s *Source) {
			s.config = decodeRegistered[C](d, n, what+": "+name)
		},
		build: func(s *Source, env *buildEnv, _ *topology.SourceConfig) (topology.SourceFactory, error) {
			srcs := make([]topology.Source, s.Parallelism)
			for i := range srcs {
				src, err := newSource(*s.config.(*C))
				if err != nil {
					return nil, err
				}
				if c, ok := src.(io.Closer); ok {
					env.opened = append(env.opened, c)
				}
				if _, ok := src.(topology.Positioner); env.checkpoints && !ok {
					// The engine would run it again from its start and
					// drop as many particles as the checkpoint covers,
					// which suits a recording, not a live source.
					return nil, fmt.Errorf("checkpoints: a live source resumes only from a position of its own, and %T is not a topology.Positioner", src)
				}
				srcs[i] = src
				env.built.addInstance(s.Name, i, src)
			}
			return func(i int) topology.Source { return srcs[i] }, nil
		},
		live: true,
	})
}

// RegisterSink makes the sink type name available to pipeline files, like
// file, mqtt, postgres and influxdb: a sink's mapping under the key name
// is decoded into a C, a struct, by its yaml tags, and newSink makes the sink, which
// the bolt's instances share, when the pipeline is built. If *C has a
// method Validate() error, parsing calls it. A sink that is an io.Closer
// is closed once, after the last instance. RegisterSink panics if name is
// empty, taken, precision or append; call it before parsing, as from an
// init function.
func RegisterSink[C any](name string, newSink func(C) (operation.Operation, error)) {
	sinkTypes.add("RegisterSink", name, sinkType{
		decode: func(d *decoder, n *yaml.Node, what, _ string, prec *particle.Precision, s *Sink) {
			if prec != nil {
				d.fail(n, "%s: sink: precision is not a key of sink type %s: give it in its mapping", what, name)
			}
			s.config = decodeRegistered[C](d, n, what+": sink: "+name)
		},
		open: func(s *Sink, _ string, _ Options) (operation.Operation, io.Closer, error) {
			op, err := newSink(*s.config.(*C))
			if err != nil {
				return nil, nil, err
			}
			c, _ := op.(io.Closer)
			return op, c, nil
		},
	})
}

// RegisterGrouping makes the grouping name available to the inputs of
// pipeline files, like shuffle, fields, global, all and forward; newGrouping makes
// the grouping of each input that names it. RegisterGrouping panics if
// name is empty or taken; call it before parsing, as from an init
// function.
func RegisterGrouping(name string, newGrouping func() topology.Grouping) {
	groupingTypes.add("RegisterGrouping", name, groupingType{make: func([]string) topology.Grouping { return newGrouping() }})
}

// validator is a registered type's config that checks itself.
type validator interface{ Validate() error }

// decodeRegistered decodes n into a new C and validates it.
func decodeRegistered[C any](d *decoder, n *yaml.Node, what string) *C {
	cfg := new(C)
	if !d.decodeStruct(n, reflect.ValueOf(cfg).Elem(), what) {
		return cfg
	}
	if v, ok := any(cfg).(validator); ok {
		if err := v.Validate(); err != nil {
			d.fail(n, "%s: %v", what, err)
		}
	}
	return cfg
}

// SourceTypes returns the names of the source types, built-in and
// registered.
func SourceTypes() []string { return sourceTypes.list() }

// SinkTypes returns the names of the sink types, built-in and registered.
func SinkTypes() []string { return sinkTypes.list() }
