package pipeline_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/pipeline"
)

// TestParseFindsWhatRunWould covers what the engine or the connection
// would refuse at run time: validate reports it with its place.
func TestParseFindsWhatRunWould(t *testing.T) {
	const cyclic = `sources:
  - name: wsn
    file: {paths: [x.lp]}
bolts:
  - name: a
    inputs:
      - {from: wsn}
      - {from: c}
    op: {type: dedup, by: [node], within: 1m}
  - name: b
    input: {from: a}
    op: {type: dedup, by: [node], within: 1m}
  - name: c
    input: {from: b}
    sink: {file: "-"}
`
	_, err := pipeline.Parse([]byte(cyclic), "p.yaml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `p.yaml:11:19: bolt "b": cycle a -> b -> c -> a: end of stream could never flow`)

	testParseErrors(t, goodMQTT, []parseErrorCase{
		{"http broker", "broker: tcp://127.0.0.1:1883\n", "broker: http://127.0.0.1:1883\n",
			[]string{`p.yaml:4:7: source "sensors": mqtt: broker "http://127.0.0.1:1883": want a URL such as tcp://localhost:1883`}},
		{"broker without scheme", "broker: tcp://127.0.0.1:1883\n", "broker: localhost:1883\n", []string{`broker "localhost:1883"`}},
		{"broker port", "broker: tcp://127.0.0.1:1883\n", "broker: tcp://127.0.0.1:18x3\n", []string{`broker "tcp://127.0.0.1:18x3"`}},
		{"sink broker", "mqtt: {broker: tcp://127.0.0.1:1883, topic", "mqtt: {broker: tcp://:1883, topic", []string{`p.yaml:19:13: bolt "publish": sink: mqtt: broker "tcp://:1883": no host`}},
	})
}

// TestEnvironmentVariables checks that ${NAME} takes the environment's
// value, that $${ is a literal ${ and that an unset variable is an error.
func TestEnvironmentVariables(t *testing.T) {
	t.Setenv("SENSORSTORM_TEST_BROKER", "tcp://broker.example:1883")
	t.Setenv("SENSORSTORM_TEST_ROOM", "lab")
	src := strings.Replace(goodMQTT, "tcp://127.0.0.1:1883\n", "${SENSORSTORM_TEST_BROKER}\n", 1)
	src = strings.Replace(src, `"results/{sensor}"`, `"results/${SENSORSTORM_TEST_ROOM}/$${x}/{sensor}"`, 1)
	p, err := pipeline.Parse([]byte(src), "p.yaml")
	require.NoError(t, err)
	assert.Equal(t, []string{"tcp://broker.example:1883"}, p.Sources[0].MQTT.Brokers)
	assert.Equal(t, "results/lab/${x}/{sensor}", p.Bolts[1].Sink.MQTT.Topic)

	testParseErrors(t, goodMQTT, []parseErrorCase{
		{"unset", "state_dir: state", "state_dir: ${SENSORSTORM_TEST_UNSET}/state", []string{`p.yaml:9:18: environment variable SENSORSTORM_TEST_UNSET is not set`}},
		{"unterminated", "state_dir: state", "state_dir: ${HOME", []string{`p.yaml:9:18: unterminated ${`}},
	})
}

// TestRelativePathsFollowThePipelineFile runs a pipeline from another
// directory: its recording and its sink file are next to it.
func TestRelativePathsFollowThePipelineFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.lp"), []byte("m v=1 1\nm v=2 2\n"), 0o644))
	yaml := "sources:\n  - name: s\n    file: {paths: [in.lp], speed: max}\nbolts:\n  - name: out\n    input: {from: s}\n    sink: {file: out/result.lp}\n"
	path := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o644))
	p, err := pipeline.Load(path)
	require.NoError(t, err)
	assert.ErrorContains(t, p.Check(""), `p.yaml:5:5: bolt "out": sink file out/result.lp: no directory `+filepath.Join(dir, "out"))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "out"), 0o755))
	require.NoError(t, p.Check(""))
	built, err := p.Build(pipeline.Options{})
	require.NoError(t, err)
	require.NoError(t, built.Run(t.Context()))
	got, err := os.ReadFile(filepath.Join(dir, "out", "result.lp"))
	require.NoError(t, err)
	assert.Equal(t, "m v=1 1\nm v=2 2\n", string(got))
}
