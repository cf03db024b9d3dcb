package influxdb_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/connectors/influxdb/influxtest"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
)

// TestSinkConformance runs the connector suite against a real InfluxDB
// 1.x and a real VictoriaMetrics; the suite's destination failure stops
// the server and starts it again.
func TestSinkConformance(t *testing.T) {
	for _, kind := range []struct {
		name string
		kind influxtest.Kind
	}{{"influxdb", influxtest.InfluxDB}, {"victoriametrics", influxtest.VictoriaMetrics}} {
		t.Run(kind.name, func(t *testing.T) {
			// VictoriaMetrics makes what it took searchable within a
			// second or so, flush or not.
			f := connectortest.Features{}
			if kind.kind == influxtest.VictoriaMetrics {
				f.DeliveryDelay = 5 * time.Second
			}
			connectortest.TestSink(t, f, func(t *testing.T) connectortest.SinkHarness {
				srv := influxtest.Start(t, influxtest.Config{Kind: kind.kind})
				if kind.kind == influxtest.InfluxDB {
					srv.CreateDatabase("test")
				}
				return &sinkHarness{srv: srv}
			})
		})
	}
}

// sinkHarness runs a Sink against a server the suite may stop and start.
type sinkHarness struct{ srv *influxtest.Server }

func (h *sinkHarness) NewSink(t testing.TB) operation.Operation {
	return newSink(t, influxdb.Config{URL: h.srv.URL() + "/write?db=test", BatchSize: 100, FlushInterval: 1})
}

func (h *sinkHarness) Read(t testing.TB) []int {
	var ns []int
	if h.srv.Kind() == influxtest.VictoriaMetrics {
		for _, s := range h.srv.Export(`{__name__="reading_n"}`) {
			ns = append(ns, int(s.Value))
		}
		return ns
	}
	for _, p := range h.srv.Points("test", "reading") {
		n, err := p.Fields["n"].(json.Number).Int64()
		if err != nil {
			t.Fatal(err)
		}
		ns = append(ns, int(n))
	}
	return ns
}

func (h *sinkHarness) StopBroker(testing.TB)  { h.srv.Stop() }
func (h *sinkHarness) StartBroker(testing.TB) { h.srv.Start() }
