package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/pipeline"
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
