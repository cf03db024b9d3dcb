package influxdb_test

import (
	"context"
	"testing"

	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/connectors/influxdb/influxtest"
	"github.com/sensorstorm/sensorstorm/connectortest"
)

// BenchmarkSink writes 50,000 readings per iteration through the Sink, in
// batches of the default size, to a real InfluxDB 1.x and a real
// VictoriaMetrics, gzip off and on, and reports the particles the server
// acknowledged per second. The servers run on the same machine.
func BenchmarkSink(b *testing.B) {
	const n = 50_000
	ps := readings(n)
	for _, bc := range []struct {
		name string
		kind influxtest.Kind
		gzip bool
	}{
		{"server=influxdb/gzip=off", influxtest.InfluxDB, false},
		{"server=influxdb/gzip=on", influxtest.InfluxDB, true},
		{"server=victoriametrics/gzip=off", influxtest.VictoriaMetrics, false},
		{"server=victoriametrics/gzip=on", influxtest.VictoriaMetrics, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := influxtest.Start(b, influxtest.Config{Kind: bc.kind})
			if bc.kind == influxtest.InfluxDB {
				srv.CreateDatabase("test")
			}
			sink := newSink(b, influxdb.Config{URL: srv.URL() + "/write?db=test", Gzip: bc.gzip})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				var out connectortest.Emitter
				for _, p := range ps {
					if err := sink.Process(ctx, p, &out); err != nil {
						b.Fatal(err)
					}
				}
				if err := sink.Flush(ctx, &out); err != nil {
					b.Fatal(err)
				}
				if out.Acked != n || len(out.Failed) > 0 {
					b.Fatalf("%d acknowledged, want %d; failed: %v", out.Acked, n, out.Failed)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "particles/s")
		})
	}
}
