package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/postgres"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/particle"
)

// BenchmarkSink writes rows through the Sink and, in the same run, the
// same rows with a plain pgx COPY into an identical table in batches of
// the same size, and reports both rates and their ratio. The two take
// turns batch by batch, each going first every other batch, so that both
// see the same load of a shared machine and neither always finds the
// server just after the other's commit.
func BenchmarkSink(b *testing.B) {
	const rows, batch = 50_000, postgres.DefaultBatchSize
	ctx := context.Background()
	d := openDB(b)
	sink := newSink(b, postgres.Config{Table: d.table("readings"), BatchSize: batch})
	ps := readings(rows)
	// Create both tables alike: the sink's, then a copy with its key.
	var out connectortest.Emitter
	require.NoError(b, sink.Process(ctx, ps[0], &out))
	require.NoError(b, sink.Flush(ctx, &out))
	d.exec(b, fmt.Sprintf("CREATE TABLE %s (LIKE %s INCLUDING ALL)", d.table("plain"), d.table("readings")))
	columns := []string{"time", "time_ns", "series", "measurement", "sensor", "n", "v"}
	values := make([][]any, rows)
	for i, p := range ps {
		values[i] = []any{time.Unix(0, p.Time).UTC(), p.Time, "reading,sensor=" + p.Tags[0].Value, p.Measurement, p.Tags[0].Value,
			p.Fields[0].Value.IntValue(), p.Fields[1].Value.FloatValue()}
	}
	var sinkTime, copyTime time.Duration
	writeSink := func(ps []particle.Particle) {
		start := time.Now()
		for _, p := range ps {
			if err := sink.Process(ctx, p, &out); err != nil {
				b.Fatal(err)
			}
		}
		if err := sink.Flush(ctx, &out); err != nil {
			b.Fatal(err)
		}
		sinkTime += time.Since(start)
	}
	copyPlain := func(values [][]any) {
		start := time.Now()
		if _, err := d.conn.CopyFrom(ctx, pgx.Identifier{d.schema, "plain"}, columns, pgx.CopyFromRows(values)); err != nil {
			b.Fatal(err)
		}
		copyTime += time.Since(start)
	}
	for b.Loop() {
		b.StopTimer()
		d.exec(b, "TRUNCATE "+d.table("readings")+", "+d.table("plain"))
		out.Acked = 0
		b.StartTimer()

		for i := 0; i < rows; i += batch {
			end := min(i+batch, rows)
			if i/batch%2 == 0 {
				writeSink(ps[i:end])
				copyPlain(values[i:end])
			} else {
				copyPlain(values[i:end])
				writeSink(ps[i:end])
			}
		}
		if out.Acked != rows || len(out.Failed) > 0 {
			b.Fatalf("%d rows acknowledged, want %d; failed: %v", out.Acked, rows, out.Failed)
		}
	}
	b.StopTimer()
	for _, table := range []string{"readings", "plain"} {
		if n := d.count(b, "SELECT count(*) FROM "+d.table(table)); n != rows {
			b.Fatalf("table %s has %d rows, want %d", table, n, rows)
		}
	}
	sinkRate := float64(rows*b.N) / sinkTime.Seconds()
	copyRate := float64(rows*b.N) / copyTime.Seconds()
	b.ReportMetric(sinkRate, "rows/s")
	b.ReportMetric(copyRate, "copy-rows/s")
	b.ReportMetric(sinkRate/copyRate, "ratio")
}
