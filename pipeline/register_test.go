package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/pipeline"
	"github.com/sensorstorm/sensorstorm/topology"
)

// scaleConfig configures scale, an operation of the test's own.
type scaleConfig struct {
	Field  string  `yaml:"field"`
	Factor float64 `yaml:"factor"`
}

// newScale returns an operation that multiplies a field by a factor.
func newScale(c scaleConfig) (operation.Operation, error) {
	if c.Factor == 0 {
		return nil, errors.New("no factor")
	}
	return operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
		p := in.Clone()
		for i, f := range p.Fields {
			if x, ok := f.Value.Number(); ok && f.Key == c.Field {
				p.Fields[i].Value = particle.Float(x * c.Factor)
			}
		}
		out.Emit(p)
		return nil
	}), nil
}

func init() { pipeline.RegisterOperation("scale", newScale) }

// A registered operation is named in a pipeline file like a built-in one:
// its keys are decoded into its config, checked when the file is parsed,
// and it runs.
func TestRegisteredOperationRuns(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.lp"), []byte("m,node=a t=1.5 1000000000\nm,node=b t=2 2000000000\n"), 0o600))
	const file = `sources:
  - name: in
    file: {paths: [in.lp], speed: max}
bolts:
  - name: scaled
    input: {from: in, grouping: global}
    op: {type: scale, field: t, factor: 2}
  - name: out
    input: {from: scaled, grouping: global}
    sink: {file: "-", precision: s}
`
	p, err := pipeline.Parse([]byte(file), filepath.Join(dir, "p.yaml"))
	require.NoError(t, err)
	var out bytes.Buffer
	built, err := p.Build(pipeline.Options{Stdout: &out})
	require.NoError(t, err)
	require.NoError(t, built.Run(context.Background()))
	assert.Equal(t, "m,node=a t=3 1\nm,node=b t=4 2\n", out.String())

	testParseErrors(t, file, []parseErrorCase{
		{"refused config", "factor: 2", "factor: 0", []string{`bolt "scaled": op scale: no factor`}},
		{"unknown key", "factor: 2", "factr: 2", []string{`bolt "scaled": op scale: unknown key "factr"`}},
	})
	assert.Contains(t, pipeline.OpTypes(), "scale")
}

// A type name is registered once, and the built-ins' names are taken.
func TestRegisterOperationTwicePanics(t *testing.T) {
	assert.Panics(t, func() { pipeline.RegisterOperation("scale", newScale) })
	assert.Panics(t, func() { pipeline.RegisterOperation("dedup", newScale) })
	assert.Panics(t, func() { pipeline.RegisterOperation("", newScale) })
}

// countConfig configures count, a source of the test's own.
type countConfig struct {
	Measurement string `yaml:"measurement"`
	N           int    `yaml:"n"`
}

// Validate refuses a count of nothing.
func (c *countConfig) Validate() error {
	if c.N < 1 {
		return fmt.Errorf("n %d: want 1 or more", c.N)
	}
	return nil
}

// newCount returns a source that emits n readings, one a second.
func newCount(c countConfig) (topology.Source, error) {
	return topology.SourceFunc(func(ctx context.Context, out topology.SourceEmitter) error {
		for i := range c.N {
			p := particle.Particle{Time: int64(i+1) * 1e9, Measurement: c.Measurement, Fields: []particle.Field{{Key: "i", Value: particle.Int(int64(i))}}}
			if err := out.Emit(p); err != nil {
				return err
			}
		}
		return nil
	}), nil
}

// recorded holds what the record sinks received, by the name in their
// config.
var recorded sync.Map // string -> *recording

// recording is what one record sink received, and whether it was closed.
type recording struct {
	mu     sync.Mutex
	lines  []string
	closed bool
}

// recordConfig configures record, a sink of the test's own.
type recordConfig struct {
	Name string `yaml:"name"`
}

// newRecord returns a sink that keeps the particles it receives as line
// protocol in recorded.
func newRecord(c recordConfig) (operation.Operation, error) {
	if c.Name == "" {
		return nil, errors.New("no name")
	}
	r, _ := recorded.LoadOrStore(c.Name, &recording{})
	return r.(*recording), nil
}

func (r *recording) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	line, err := particle.AppendLineProtocol(nil, &in, particle.Second)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, string(line))
	return err
}

func (r *recording) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

func init() {
	pipeline.RegisterSource("count", newCount)
	pipeline.RegisterSink("record", newRecord)
	pipeline.RegisterGrouping("first", func() topology.Grouping {
		return topology.Direct(func(*particle.Particle, int) int { return 0 })
	})
}

// A registered source, sink and grouping are named in a pipeline file
// like the built-in ones: their keys are decoded into their configs,
// checked when the file is parsed, and they run; the sink is closed.
func TestRegisteredSourceAndSinkRun(t *testing.T) {
	const file = `sources:
  - name: in
    count: {measurement: m, n: 3}
bolts:
  - name: scaled
    input: {from: in, grouping: first}
    parallelism: 2
    op: {type: scale, field: i, factor: 10}
  - name: out
    input: {from: scaled, grouping: global}
    sink: {record: {name: registered}}
`
	p, err := pipeline.Parse([]byte(file), "p.yaml")
	require.NoError(t, err)
	assert.Equal(t, "count", p.Sources[0].Type)
	assert.Equal(t, "record", p.Bolts[1].Sink.Type)
	built, err := p.Build(pipeline.Options{})
	require.NoError(t, err)
	require.NoError(t, built.Run(context.Background()))
	r, ok := recorded.Load("registered")
	require.True(t, ok)
	rec := r.(*recording)
	assert.Equal(t, []string{"m i=0 1\n", "m i=10 2\n", "m i=20 3\n"}, rec.lines)
	assert.True(t, rec.closed)
	assert.Equal(t, uint64(3), built.Stats("scaled").Processed.Load())

	testParseErrors(t, file, []parseErrorCase{
		{"refused source config", "n: 3", "n: 0", []string{`source "in": count: n 0: want 1 or more`}},
		{"unknown source key", "n: 3", "m: 3", []string{`source "in": count: unknown key "m" (known: measurement, n)`}},
		{"two source types", "    count:", "    file: {paths: [x.lp]}\n    count:", []string{`source "in": set one type, not file and count`}},
		{"unknown sink key", "{name: registered}", "{nam: registered}", []string{`bolt "out": sink: record: unknown key "nam"`}},
		{"precision of a registered sink", "sink: {record:", "sink: {precision: s, record:", []string{`bolt "out": sink: precision is not a key of sink type record`}},
		{"fields of a registered grouping", "grouping: first}", "grouping: first, fields: [i]}", []string{`bolt "scaled": fields given for a first grouping`}},
	})
	assert.Subset(t, pipeline.SourceTypes(), []string{"file", "mqtt", "http", "count"})
	assert.Subset(t, pipeline.SinkTypes(), []string{"file", "mqtt", "postgres", "influxdb", "record"})
}

// A sink's error at Build names its bolt and place in the file.
func TestRegisteredSinkRefusedAtBuild(t *testing.T) {
	p, err := pipeline.Parse([]byte(`sources:
  - name: in
    count: {n: 1}
bolts:
  - name: out
    input: in
    sink: {record: {}}
`), "p.yaml")
	require.NoError(t, err)
	_, err = p.Build(pipeline.Options{})
	assert.EqualError(t, err, `p.yaml:5:5: bolt "out": no name`)
}

// The built-in types' names and the keys beside a type's are taken, and
// a name is registered once.
func TestRegisterSourceSinkGroupingTwicePanics(t *testing.T) {
	assert.Panics(t, func() { pipeline.RegisterSource("mqtt", newCount) })
	assert.Panics(t, func() { pipeline.RegisterSource("count", newCount) })
	assert.Panics(t, func() { pipeline.RegisterSink("file", newRecord) })
	assert.Panics(t, func() { pipeline.RegisterSink("", newRecord) })
	assert.Panics(t, func() { pipeline.RegisterSource("parallelism", newCount) })
	assert.Panics(t, func() { pipeline.RegisterSink("precision", newRecord) })
	assert.Panics(t, func() { pipeline.RegisterGrouping("fields", topology.Shuffle) })
}

// A registered source that is not a topology.Positioner is refused in a
// pipeline that takes checkpoints: the engine would run it again from its
// start at a restore, which a live source cannot do.
func TestRegisteredSourceWithCheckpointsRefused(t *testing.T) {
	p, err := pipeline.Parse([]byte(`sources:
  - name: in
    count: {n: 1}
checkpoints: {dir: ckpt}
bolts:
  - name: out
    input: in
    sink: {record: {name: checkpointed}}
`), "p.yaml")
	require.NoError(t, err)
	_, err = p.Build(pipeline.Options{Dir: t.TempDir()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `source "in"`)
	assert.Contains(t, err.Error(), "not a topology.Positioner")
}
