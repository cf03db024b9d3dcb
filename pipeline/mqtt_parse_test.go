package pipeline_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/pipeline"
)

const goodMQTT = `sources:
  - name: sensors
    mqtt:
      broker: tcp://127.0.0.1:1883
      topics: [sensors/#]
      qos: 1
      client_id: mean-in
      mode: spool
      state_dir: state
      payload: {format: lp, precision: s, topic_tags: "sensors/{sensor}"}
bolts:
  - name: mean
    input: {from: sensors, grouping: fields, fields: [sensor]}
    window: 1s
    op: {type: window-mean, size: 10s, by: [sensor]}
  - name: publish
    input: {from: mean, grouping: global}
    sink:
      mqtt: {broker: tcp://127.0.0.1:1883, topic: "results/{sensor}", qos: 1}
      precision: s
`

func TestParseMQTT(t *testing.T) {
	p, err := pipeline.Parse([]byte(goodMQTT), "p.yaml")
	require.NoError(t, err)
	src := p.Sources[0].MQTT
	require.NotNil(t, src)
	assert.Equal(t, []string{"tcp://127.0.0.1:1883"}, src.Brokers)
	assert.Equal(t, mqtt.AtLeastOnce, src.QoS)
	assert.Equal(t, mqtt.ModeSpool, src.Mode)
	assert.Equal(t, particle.Second, src.Payload.Precision)
	assert.Equal(t, "sensors/{sensor}", src.Payload.TopicTags)
	sink := p.Bolts[1].Sink.MQTT
	require.NotNil(t, sink)
	assert.Equal(t, "results/{sensor}", sink.Topic)
	assert.Equal(t, particle.Second, sink.Precision, "the sink's precision")
	assert.Equal(t, mqtt.DefaultClientID("sensorstorm-publish"), sink.ClientID, "a client id of its own")
	assert.True(t, p.Acking.Enabled, "MQTT sources learn from acking")
	assert.Equal(t, pipeline.DefaultMQTTMaxPending, p.Acking.MaxPending)
	require.NoError(t, p.Check(t.TempDir()), "nothing to read, and no broker contacted")

	p, err = pipeline.Parse([]byte(strings.Replace(goodMQTT, "qos: 1\n", "qos: 1\n      tls: {ca_file: ca.pem}\n", 1)), "p.yaml")
	require.NoError(t, err)
	assert.ErrorContains(t, p.Check(t.TempDir()), `p.yaml:2:5: source "sensors": open `)
}

func TestParseMQTTErrors(t *testing.T) {
	testParseErrors(t, goodMQTT, []parseErrorCase{
		{"qos", "qos: 1\n      client", "qos: 3\n      client", []string{`p.yaml:6:12: source "sensors": mqtt: qos: QoS "3": want 0, 1 or 2`}},
		{"mode", "mode: spool", "mode: disk", []string{`p.yaml:8:13: source "sensors": mqtt: mode: mode "disk": want spool, tree or receipt`}},
		{"nested key", "{format: lp,", "{fromat: lp,", []string{`p.yaml:10:17: source "sensors": mqtt: payload: unknown key "fromat"`}},
		{"payload format", "{format: lp,", "{format: xml,", []string{`p.yaml:10:25: source "sensors": mqtt: payload: format: format "xml": want lp or json`}},
		{"keepalive", "qos: 1\n      client", "keep_alive: 10 s\n      client", []string{`p.yaml:6:19: source "sensors": mqtt: keep_alive: want a duration`}},
		{"invalid connection", "qos: 1\n      client", "keep_alive: 10ms\n      client", []string{`p.yaml:4:7: source "sensors": mqtt: invalid config: keepalive below 1s`}},
		{"no state dir", "      state_dir: state\n", "", []string{`p.yaml:4:7: source "sensors": mqtt: mode spool (the default) needs state_dir`}},
		{"no broker", "mqtt: {broker: tcp://127.0.0.1:1883, topic", "mqtt: {topic", []string{`p.yaml:19:13: bolt "publish": sink: mqtt: no broker`}},
		{"no sink topic", `, topic: "results/{sensor}"`, "", []string{`p.yaml:19:13: bolt "publish": sink: mqtt: no topic`}},
		{"sink topic wildcard", `topic: "results/{sensor}"`, `topic: "results/#"`, []string{`p.yaml:19:13: bolt "publish": mqtt: invalid sink config: sink topic template "results/#"`}},
		{"file and mqtt sink", "      precision: s\n", "      file: out.lp\n", []string{`p.yaml:19:7: bolt "publish": sink: set one type, not file and mqtt`}},
		{"parallelism without shared subscriptions", "    mqtt:\n", "    parallelism: 2\n    mqtt:\n", []string{`p.yaml:2:5: source "sensors": parallelism 2 needs shared subscriptions, such as $share/sensors/sensors/#`}},
		{"acking off", "sources:\n", "acking: {enabled: false}\nsources:\n", []string{`p.yaml:3:5: source "sensors": mqtt mode spool learns from acking`}},
		{"client id taken", "topic: \"results/{sensor}\",", "client_id: mean-in, topic: \"results/{sensor}\",", []string{`p.yaml:16:5: bolt "publish": client id "mean-in" is source "sensors"'s too`}},
		{"mixed with a file source", "bolts:\n", "  - name: wsn\n    file: {paths: [x.lp]}\nbolts:\n", []string{`p.yaml:2:5: source "sensors": an MQTT feed runs on the live clock and file source "wsn" replays on its own`}},
	})
}

func TestParseMQTTBacklog(t *testing.T) {
	yml := strings.Replace(goodMQTT, "qos: 1\n", "qos: 1\n      backlog: {max_backlog_bytes: 1000000, min_free_bytes: 2000}\n", 1)
	p, err := pipeline.Parse([]byte(yml), "p.yaml")
	require.NoError(t, err)
	bl := p.Sources[0].MQTT.Backlog
	assert.Equal(t, int64(1000000), bl.MaxBytes)
	assert.Equal(t, int64(2000), bl.MinFree)

	_, err = pipeline.Parse([]byte(strings.Replace(yml, "min_free_bytes: 2000", "min_free_bytes: -1", 1)), "p.yaml")
	assert.ErrorContains(t, err, `source "sensors"`)
	_, err = pipeline.Parse([]byte(strings.Replace(yml, "min_free_bytes", "memory_records", 1)), "p.yaml")
	assert.ErrorContains(t, err, "memory_records", "only the quota's keys are settable")
}

// An MQTT sink that publishes at checkpoints has one instance: several
// would take their snapshots at different points of the stream.
func TestParseMQTTSinkInstancesWithCheckpoints(t *testing.T) {
	parallel := strings.Replace(goodMQTT, "  - name: publish\n", "  - name: publish\n    parallelism: 2\n", 1)
	const want = `bolt "publish": parallelism 2: an mqtt sink publishes at checkpoints from one instance`
	for _, tc := range []struct {
		name, src string
		err       bool
	}{
		{"with checkpoints", "checkpoints: {dir: ckpt}\n" + parallel, true},
		{"at least once", "checkpoints: {dir: ckpt}\n" + strings.Replace(parallel, "qos: 1}", "qos: 1, at_least_once: true}", 1), false},
		{"without checkpoints", parallel, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pipeline.Parse([]byte(tc.src), "p.yaml")
			if tc.err {
				assert.ErrorContains(t, err, want)
				return
			}
			assert.NoError(t, err)
		})
	}
	p, err := pipeline.Parse([]byte(parallel), "p.yaml")
	require.NoError(t, err)
	assert.ErrorContains(t, p.CheckCluster(), want, "a cluster always takes checkpoints")
}
