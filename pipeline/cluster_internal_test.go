package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SharedFeed is an MQTT source for a cluster, for the tests of both
// packages: two instances sharing a subscription, mode tree.
const SharedFeed = `sources:
  - name: sensors
    parallelism: 2
    mqtt:
      broker: tcp://127.0.0.1:1883
      topics: ["$share/mean/sensors/#"]
      mode: tree
bolts:
  - name: out
    input: {from: sensors}
    sink: {file: "-"}
`

// On a cluster, an MQTT source instance has the same client id on every
// worker: the pipeline's when the file gives none, else the file's.
func TestClusterClientIDs(t *testing.T) {
	feed := SharedFeed
	for _, tc := range []struct {
		name, file, cluster string
		want                []string
	}{
		{"the pipeline's", feed, "mean", []string{"sensorstorm-mean-sensors-0", "sensorstorm-mean-sensors-1"}},
		{"the file's", strings.Replace(feed, "mode: tree", "mode: tree\n      client_id: in", 1), "mean", []string{"in-0", "in-1"}},
		{"one process: the host's", feed, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse([]byte(tc.file), "p.yaml")
			require.NoError(t, err)
			var got []string
			for _, c := range mqttSourceConfigs(&p.Sources[0], t.TempDir(), tc.cluster, nil, false) {
				got = append(got, c.ClientID)
			}
			if tc.want == nil {
				assert.Equal(t, p.Sources[0].MQTT.ClientID+"-1", got[1], "as parsed, with the host's name")
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// On a cluster, an MQTT sink's client id is the worker's: every worker
// running one of its instances connects.
func TestClusterSinkClientIDs(t *testing.T) {
	p, err := Parse([]byte(strings.Replace(SharedFeed, `sink: {file: "-"}`, `sink: {mqtt: {broker: tcp://127.0.0.1:1883, topic: "results/{sensor}", client_id: out}}`, 1)), "p.yaml")
	require.NoError(t, err)
	sink := p.Bolts[0].Sink.MQTT
	assert.Equal(t, "out", mqttSinkConfig(sink, "out", Options{}).ClientID, "one process")
	assert.Equal(t, "out-w1", mqttSinkConfig(sink, "out", Options{Cluster: "mean", Worker: "w1"}).ClientID, "worker w1")
}

// On a cluster, a file sink writes the file of its worker, the worker's
// name before the extension, and appends to it: a worker started again
// under its name goes on with its file, and nothing truncates the file
// of another process.
func TestClusterFileSinkPerWorker(t *testing.T) {
	dir := t.TempDir()
	recording, err := filepath.Abs("../testdata/library1-r1.lp")
	require.NoError(t, err)
	p, err := Parse(fmt.Appendf(nil, `sources:
  - name: wsn
    file: {paths: [%q], speed: max}
bolts:
  - name: out
    input: {from: wsn}
    sink: {file: out.lp}
`, recording), filepath.Join(dir, "p.yaml"))
	require.NoError(t, err)
	another := filepath.Join(dir, "out.lp")
	require.NoError(t, os.WriteFile(another, []byte("another process's line\n"), 0o644))
	run := func(worker string) {
		t.Helper()
		built, err := p.Build(Options{Cluster: "mean", Worker: worker})
		require.NoError(t, err)
		require.NoError(t, built.Run(context.Background()))
	}
	run("w1")
	once, err := os.ReadFile(filepath.Join(dir, "out.w1.lp"))
	require.NoError(t, err)
	assert.Equal(t, 7563, bytes.Count(once, []byte("\n")))
	run("w1")
	run("w2")
	twice, err := os.ReadFile(filepath.Join(dir, "out.w1.lp"))
	require.NoError(t, err)
	assert.Equal(t, string(once)+string(once), string(twice), "started again, w1 appends")
	w2, err := os.ReadFile(filepath.Join(dir, "out.w2.lp"))
	require.NoError(t, err)
	assert.Equal(t, string(once), string(w2))
	kept, err := os.ReadFile(another)
	require.NoError(t, err)
	assert.Equal(t, "another process's line\n", string(kept), "the path as written is nobody's on a cluster")

	assert.Equal(t, "out.w1", workerPath("out", "w1"))
	assert.Equal(t, filepath.Join("a.b", "out.w1.lp"), workerPath(filepath.Join("a.b", "out.lp"), "w1"))
}
