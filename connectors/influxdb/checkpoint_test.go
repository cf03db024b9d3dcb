package influxdb_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/connectors/influxdb/influxtest"
	"github.com/sensorstorm/sensorstorm/connectortest"
)

// TestSinkWritesAgainAfterRestore writes a recording into InfluxDB 1.x
// through a Sink killed mid-stream (what it held never written), then
// writes it again from an earlier point, as a run restored from a
// checkpoint taken there does: the server overwrites each point written
// twice, and the database holds what a run never killed stores. The Sink
// needs no snapshot for it.
func TestSinkWritesAgainAfterRestore(t *testing.T) {
	ps := connectortest.Recording(t, "../../testdata/library1-r1.lp", 3000)
	srv := influxtest.Start(t, influxtest.Config{})
	write := func(db string, from, to int) {
		sink := newSink(t, influxdb.Config{URL: srv.URL() + "/write?db=" + db, BatchSize: 250})
		out := &connectortest.Emitter{}
		connectortest.Feed(t, sink, out, ps[from:to], 97)
		if to == len(ps) {
			require.NoError(t, sink.Flush(context.Background(), out))
		}
	}
	srv.CreateDatabase("want")
	write("want", 0, len(ps))
	srv.CreateDatabase("got")
	write("got", 0, 2200)       // killed at 2,200
	write("got", 1000, len(ps)) // restored from a checkpoint at 1,000
	want, got := srv.Points("want", "wsn"), srv.Points("got", "wsn")
	require.Len(t, want, len(ps))
	require.Equal(t, want, got)
}
