package pipeline_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/influxdb/influxtest"
	"github.com/sensorstorm/sensorstorm/pipeline"
)

// TestInfluxDBSink runs a pipeline that writes a recording to a real
// InfluxDB 1.x: one point per reading, every tree acknowledged.
func TestInfluxDBSink(t *testing.T) {
	srv := influxtest.Start(t, influxtest.Config{})
	srv.CreateDatabase("wsn")
	p, err := pipeline.Parse(fmt.Appendf(nil, `
sources:
  - name: wsn
    file: {paths: [../testdata/library1-r1.lp], speed: max}
bolts:
  - name: store
    input: {from: wsn, grouping: global}
    sink:
      influxdb: {url: %q, batch_size: 1000, gzip: true}
`, srv.URL()+"/write?db=wsn"), "p.yaml")
	require.NoError(t, err)
	topo, err := p.Build(pipeline.Options{})
	require.NoError(t, err)
	require.NoError(t, topo.Run(context.Background()))

	points := len(srv.Points("wsn", "wsn"))
	assert.Equal(t, 7563, points)
	assert.Equal(t, uint64(points), topo.Stats("store").Processed.Load())
	assert.Zero(t, topo.Stats("store").Errors.Load())
}

func TestParseInfluxDBSinkErrors(t *testing.T) {
	testParseErrors(t, good, []parseErrorCase{
		{"no url", `sink: {file: "-"}`, `sink: {influxdb: {batch_size: 10}}`, []string{"p.yaml:13:", "url is empty"}},
		{"no db", `sink: {file: "-"}`, `sink: {influxdb: {url: "http://localhost:8086/write"}}`, []string{"needs db"}},
		{"two sinks", `sink: {file: "-"}`, `sink: {file: "-", influxdb: {url: "http://h/write?db=x"}}`, []string{"sink: set one type, not file and influxdb (add a bolt for each other)"}},
		{"unknown key", `sink: {file: "-"}`, `sink: {influxdb: {url: "http://h/write?db=x", bucket: b}}`, []string{"bucket"}},
	})
}
