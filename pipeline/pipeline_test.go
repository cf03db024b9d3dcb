package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/pipeline"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const good = `sources:
  - name: wsn
    file: {paths: [testdata/library1-r1.lp], speed: max}
bolts:
  - name: mean10m
    input: {from: wsn, grouping: fields, fields: [node]}
    parallelism: 2
    window: 5s
    late: drop
    op: {type: window-mean, size: 10m, fields: [temperature, humidity], by: [node]}
  - name: out
    input: {from: mean10m, grouping: global}
    sink: {file: "-"}
`

// parseErrorCase is base with from replaced by to, and the errors it
// gives.
type parseErrorCase struct {
	name, from, to string
	want           []string
}

func testParseErrors(t *testing.T, base string, tests []parseErrorCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(base, tt.from, tt.to, 1)
			require.NotEqual(t, base, src)
			_, err := pipeline.Parse([]byte(src), "p.yaml")
			require.Error(t, err)
			assert.ErrorIs(t, err, pipeline.ErrInvalid)
			var pe *pipeline.Error
			assert.True(t, errors.As(err, &pe))
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestParseErrorsNameLineAndProblem(t *testing.T) {
	testParseErrors(t, good, []parseErrorCase{
		{"unknown op", "window-mean,", "window-men,", []string{`p.yaml:10:16: bolt "mean10m": unknown op type "window-men" (known: align, dedup, `}},
		{"unknown input", "from: mean10m", "from: mean", []string{`p.yaml:12:19: bolt "out": input from unknown component "mean"`}},
		{"unknown key", "    parallelism: 2", "    paralelism: 2", []string{`p.yaml:7:5: bolt "mean10m": unknown key "paralelism"`}},
		{"bad duration", "window: 5s", "window: 5 s", []string{`p.yaml:8:13: bolt "mean10m": window: want a duration`}},
		{"bad op param", "size: 10m", "size: 10q", []string{`p.yaml:10:35: bolt "mean10m": op window-mean: size: want a duration such as 5s or 10m, got "10q"`}},
		{"op param of the wrong type", "fields: [temperature, humidity]", "fields: {temperature: 1}", []string{`p.yaml:10:48: bolt "mean10m": op window-mean: fields: cannot unmarshal !!map into []string`}},
		{"op param of another op", "size: 10m,", "size: 10m, bucket: 1m,", []string{`p.yaml:10:40: bolt "mean10m": op window-mean: unknown key "bucket"`}},
		{"invalid op config", "size: 10m,", "gap: 1m, size: 10m,", []string{`p.yaml:10:9: bolt "mean10m": op window-mean: ops: invalid config: set exactly one of size, gap and count`}},
		{"late policy", "late: drop", "late: keep", []string{`p.yaml:9:11: bolt "mean10m": late:`}},
		{"grouping", "grouping: global", "grouping: broadcast", []string{`p.yaml:12:38: bolt "out": unknown grouping "broadcast"`}},
		{"fields without names", "grouping: fields, fields: [node]", "grouping: fields", []string{`p.yaml:6:12: bolt "mean10m": fields grouping without fields`}},
		{"speed", "speed: max", "speed: fast", []string{`p.yaml:3:53: source "wsn": file: speed:`}},
		{"mqtt without topics", "file: {paths: [testdata/library1-r1.lp], speed: max}", "mqtt: {broker: tcp://h:1883, mode: tree}", []string{`p.yaml:3:11: source "wsn": mqtt: no topics`}},
		{"duplicate name", "name: out", "name: wsn", []string{`p.yaml:11:5: component name "wsn" used twice`}},
		{"two problems", "sink: {file: \"-\"}", "sink: {fiel: x}", []string{`p.yaml:13:12: bolt "out": sink: unknown key "fiel"`, `p.yaml:13:11: bolt "out": sink: set file`}},
		{"not yaml", "    window: 5s", "  window: [5s", []string{`p.yaml:4:0: not YAML`}},
	})
}

// TestParseSizesHaveMaxima checks that sizes far beyond any need are
// errors naming the key and its place, not runs that take all memory.
func TestParseSizesHaveMaxima(t *testing.T) {
	testParseErrors(t, good, []parseErrorCase{
		{"parallelism", "parallelism: 2", "parallelism: 1000000000",
			[]string{`p.yaml:7:18: bolt "mean10m": parallelism: 1000000000 is more than the maximum, 1024`}},
		{"max line length", "speed: max}", "speed: max, max_line_length: 2000000000}",
			[]string{`p.yaml:3:75: source "wsn": file: max_line_length: 2000000000 is more than the maximum, 1073741824`}},
		{"acking max_pending", "sources:", "acking: {max_pending: 100000000}\nsources:",
			[]string{`p.yaml:1:23: acking: max_pending: 100000000 is more than the maximum, 16777216`}},
	})
	testParseErrors(t, goodMQTT, []parseErrorCase{
		{"a connector's count", "qos: 1\n", "qos: 1\n      max_buffered: 100000000\n",
			[]string{`p.yaml:7:21: source "sensors": mqtt: max_buffered: 100000000 is more than the maximum, 16777216`}},
		{"a connector's bytes", "qos: 1\n", "qos: 1\n      max_payload: 100000000000\n",
			[]string{`p.yaml:7:20: source "sensors": mqtt: max_payload: 100000000000 is more than the maximum, 17179869184`}},
	})
}

func TestParseGood(t *testing.T) {
	p, err := pipeline.Parse([]byte(good), "p.yaml")
	require.NoError(t, err)
	require.Len(t, p.Sources, 1)
	require.Len(t, p.Bolts, 2)
	assert.Equal(t, "window-mean", p.Bolts[0].Op)
	assert.Equal(t, 2, p.Bolts[0].Parallelism)
	assert.Equal(t, []string{"node"}, p.Bolts[0].Inputs[0].Fields)
	require.NotNil(t, p.Bolts[1].Sink)
	assert.Error(t, p.Check("/nonexistent"))
	require.NoError(t, p.Check(".."))
}

// The shipped pipelines parse, build and run on the recordings in the
// repository.
func TestShippedPipelinesRun(t *testing.T) {
	for _, name := range []string{"library1-mean.yaml", "library1-align.yaml", "library1-alerts.yaml"} {
		t.Run(name, func(t *testing.T) {
			p, err := pipeline.Load("../pipelines/" + name)
			require.NoError(t, err)
			var out bytes.Buffer
			topo, err := p.Build(pipeline.Options{Stdout: &out})
			require.NoError(t, err)
			require.NoError(t, topo.Run(context.Background()))
			lines := strings.Count(out.String(), "\n")
			assert.Positive(t, lines)
			for _, c := range topo.Components() {
				assert.Zero(t, topo.Stats(c).Late.Load(), "late particles at %s", c)
				assert.Zero(t, topo.Stats(c).Errors.Load(), "errors at %s", c)
			}
			t.Logf("%s: %d lines", name, lines)
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(goodMQTT))
	f.Add([]byte("sources: []\nbolts: {}"))
	f.Add([]byte("bolts:\n  - name: x\n    op: {type: dedup, within: -1s}\n"))
	f.Add([]byte("sources:\n  - name: s\n    file: {paths: [${HOME}/x.lp, $${y}, ${]}\nbolts:\n  - name: a\n    inputs: [{from: s}, {from: b}]\n    op: {type: dedup, by: [n], within: 1m}\n  - name: b\n    input: a\n    sink: {file: '-'}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := pipeline.Parse(data, "fuzz.yaml")
		if err != nil {
			var pe *pipeline.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		if len(p.Sources) == 0 || len(p.Bolts) == 0 {
			t.Fatalf("accepted a pipeline without sources or bolts")
		}
	})
}

// goodForward chains a bolt to one of the same parallelism.
const goodForward = `sources:
  - name: wsn
    file: {paths: [testdata/library1-r1.lp], speed: max}
bolts:
  - name: dedup
    input: {from: wsn, grouping: fields, fields: [node]}
    parallelism: 2
    op: {type: dedup, by: [node, seq], within: 1m}
  - name: mean10m
    input: {from: dedup, grouping: forward}
    parallelism: 2
    op: {type: window-mean, size: 10m, fields: [temperature], by: [node]}
  - name: out
    input: {from: mean10m, grouping: global}
    sink: {file: "-"}
`

func TestParseForward(t *testing.T) {
	p, err := pipeline.Parse([]byte(goodForward), "p.yaml")
	require.NoError(t, err)
	assert.Equal(t, "forward", p.Bolts[1].Inputs[0].Grouping)
	testParseErrors(t, goodForward, []parseErrorCase{
		{"parallelism mismatch", "    parallelism: 2\n    op: {type: window-mean", "    parallelism: 3\n    op: {type: window-mean",
			[]string{`p.yaml:10:19: bolt "mean10m": forward input from "dedup": parallelism 3, "dedup"'s 2: a forward edge joins bolts of the same parallelism`}},
		{"from a source", "{from: dedup, grouping: forward}", "{from: wsn, grouping: forward}",
			[]string{`p.yaml:10:19: bolt "mean10m": forward input from source "wsn": a forward edge starts at a bolt`}},
		{"with fields", "grouping: forward}", "grouping: forward, fields: [node]}",
			[]string{`bolt "mean10m": fields given for a forward grouping`}},
	})
}
