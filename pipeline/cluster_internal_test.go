package pipeline

import (
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
