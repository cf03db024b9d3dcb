package pipeline_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/pipeline"
)

// A file source's range, loop, concat and future bound, and a file
// sink's append, parse from a file.
func TestParseFileSourceReplayKeys(t *testing.T) {
	p, err := pipeline.Parse([]byte(`sources:
  - name: r
    file: {paths: [a.lp, b.lp], from: 2006-11-13T18:00:00Z, to: "1163444400000000000", loop: true, concat: true, future_bound: -1s}
bolts:
  - name: out
    input: r
    sink: {file: out.lp, append: true}
`), "p.yaml")
	require.NoError(t, err)
	f := p.Sources[0].File
	assert.Equal(t, time.Date(2006, 11, 13, 18, 0, 0, 0, time.UTC), f.From)
	assert.Equal(t, time.Date(2006, 11, 13, 19, 0, 0, 0, time.UTC), f.To.UTC())
	assert.True(t, f.Loop)
	assert.True(t, f.Concat)
	assert.Equal(t, -time.Second, f.FutureBound)
	assert.True(t, p.Bolts[0].Sink.Append)
}

func TestParseFileSourceReplayKeyErrors(t *testing.T) {
	base := `sources:
  - name: r
    file: {paths: [a.lp], from: 2006-11-13T18:00:00Z}
bolts:
  - name: out
    input: r
    sink: {file: out.lp}
`
	testParseErrors(t, base, []parseErrorCase{
		{"bad from", "from: 2006-11-13T18:00:00Z", "from: yesterday", []string{`p.yaml:3:33: source "r": file: from: want RFC 3339`}},
		{"to before from", "from: 2006-11-13T18:00:00Z", "from: 2006-11-13T18:00:00Z, to: 2006-11-13T17:00:00Z", []string{"file: to 2006-11-13T17:00:00Z is not after from"}},
		{"loop on stdin", "paths: [a.lp]", `paths: ["-"], loop: true`, []string{"loop cannot replay standard input"}},
		{"bad loop", "paths: [a.lp]", "paths: [a.lp], loop: often", []string{"file: loop: want true or false"}},
		{"append to stdout", "sink: {file: out.lp}", `sink: {file: "-", append: true}`, []string{"append applies to a file sink writing a file"}},
	})
}

// A pipeline made in Go gets the defaults a file does, reads "-" from
// Options.Stdin, and its errors name the component without a file.
func TestBuildPipelineMadeInGo(t *testing.T) {
	p := &pipeline.Pipeline{
		Sources: []pipeline.Source{{Name: "r", Type: "file", File: &pipeline.FileSource{Paths: []string{"-"}, Speed: replay.Max}}},
		Bolts:   []pipeline.Bolt{{Name: "out", Inputs: []pipeline.Input{{From: "r"}}, Sink: &pipeline.Sink{Type: "file", File: "-"}}},
	}
	var out bytes.Buffer
	built, err := p.Build(pipeline.Options{Stdin: strings.NewReader("m v=1 1\nm v=2 2\n"), Stdout: &out})
	require.NoError(t, err)
	assert.Equal(t, 1, p.Sources[0].Parallelism)
	assert.Equal(t, "shuffle", p.Bolts[0].Inputs[0].Grouping)
	require.Len(t, built.Instances("r"), 1, "the replay is made at Build, for its controls")
	assert.IsType(t, &replay.Source{}, built.Instances("r")[0])
	require.NoError(t, built.Run(context.Background()))
	assert.Equal(t, "m v=1 1\nm v=2 2\n", out.String())

	p.Sources[0].File.Paths = []string{filepath.Join(t.TempDir(), "missing.lp")}
	_, err = p.Build(pipeline.Options{})
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Regexp(t, `^source "r": open .*missing.lp: no such file or directory$`, err.Error())
}

// A pipeline made in Go is checked as a parsed one is: Build refuses
// what Parse would, naming the components.
func TestBuildChecksAPipelineMadeInGo(t *testing.T) {
	p := &pipeline.Pipeline{
		Sources: []pipeline.Source{{Name: "r", Type: "file", File: &pipeline.FileSource{Paths: []string{"-"}, Speed: replay.Max}}},
		Bolts: []pipeline.Bolt{
			{Name: "a", Inputs: []pipeline.Input{{From: "b"}}, Sink: &pipeline.Sink{Type: "file", File: "-"}},
			{Name: "b", Inputs: []pipeline.Input{{From: "a"}, {From: "gone"}}, Sink: &pipeline.Sink{Type: "file", File: "-"}},
			{Name: "r", Inputs: []pipeline.Input{{From: "b"}}, Sink: &pipeline.Sink{Type: "file", File: "-"}},
			{Name: "mean", Inputs: []pipeline.Input{{From: "r"}}, Op: "window-mean"},
		},
	}
	_, err := p.Build(pipeline.Options{Stdin: strings.NewReader("")})
	require.ErrorIs(t, err, pipeline.ErrInvalid)
	assert.ErrorContains(t, err, `component name "r" used twice`)
	assert.ErrorContains(t, err, `bolt "b": input from unknown component "gone"`)
	assert.ErrorContains(t, err, "cycle a -> b -> a")
	assert.ErrorContains(t, err, `bolt "mean": op window-mean: an operation's parameters come from a pipeline file`)
}

// A file sink with Append adds to its file.
func TestFileSinkAppends(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.lp"), []byte("m v=1 1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "out.lp"), []byte("m v=0 0\n"), 0o644))
	p, err := pipeline.Parse([]byte("sources:\n  - {name: r, file: {paths: [in.lp]}}\nbolts:\n  - {name: out, input: r, sink: {file: out.lp, append: true}}\n"), filepath.Join(dir, "p.yaml"))
	require.NoError(t, err)
	built, err := p.Build(pipeline.Options{})
	require.NoError(t, err)
	require.NoError(t, built.Run(context.Background()))
	b, err := os.ReadFile(filepath.Join(dir, "out.lp"))
	require.NoError(t, err)
	assert.Equal(t, "m v=0 0\nm v=1 1\n", string(b))
}
