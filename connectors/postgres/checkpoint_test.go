package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/postgres"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/internal/pgtest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// recording returns the first 3,000 particles of the test recording,
// with, every 40th, more fields of a point 30 particles back (merged into
// its row) and, every 55th, a point 20 back again (a duplicate), so that
// merges and duplicates cross every cut.
func recording(t *testing.T) []particle.Particle {
	t.Helper()
	var ps []particle.Particle
	for i, p := range connectortest.Recording(t, "../../testdata/library1-r1.lp", 3000) {
		ps = append(ps, p)
		if i >= 40 && i%40 == 0 {
			q := ps[len(ps)-31]
			q.Fields = []particle.Field{{Key: "checked", Value: particle.Int(int64(i))}, q.Fields[1]}
			ps = append(ps, q)
		}
		if i >= 55 && i%55 == 0 {
			ps = append(ps, ps[len(ps)-21])
		}
	}
	return ps
}

// feed processes ps into s as the engine would, with a tick every 211
// particles.
func feed(t *testing.T, s *postgres.Sink, out *connectortest.Emitter, ps []particle.Particle) {
	t.Helper()
	connectortest.Feed(t, s, out, ps, 211)
}

// rows returns every row of table as JSON, epoch included, in key order.
func (d *db) rows(t *testing.T, table string) []string {
	t.Helper()
	return d.strings(t, fmt.Sprintf(`SELECT to_jsonb(t)::text FROM %s t ORDER BY series, time_ns`, table))
}

// withParam returns the connection URL u with the query parameter k=v.
func withParam(u, k, v string) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + k + "=" + v
}

// feedCuts feeds ps[from:to] into s, taking a snapshot at each of cuts
// in between and then calling after, when set, with the snapshot's index
// among cuts. It returns the snapshots.
func feedCuts(t *testing.T, s *postgres.Sink, out *connectortest.Emitter, ps []particle.Particle, from, to int, cuts []int, after func(i int)) [][]byte {
	t.Helper()
	var snaps [][]byte
	for i, cut := range cuts {
		feed(t, s, out, ps[from:cut])
		snaps = append(snaps, connectortest.Snapshot(t, s))
		from = cut
		if after != nil {
			after(i)
		}
	}
	feed(t, s, out, ps[from:to])
	return snaps
}

// TestSinkRestoresCheckpoints writes a recording, with merges and
// duplicates, through a Sink that takes snapshots and is killed (its
// held rows never written, its connections dropped), then restores a new
// Sink from one of the snapshots and writes the rest of the recording
// from that snapshot's point: the table holds the rows of a run never
// killed, without those written after the snapshot that the restored run
// does not write again, epochs included, whichever snapshot is restored (one whose
// checkpoint never completed is not: the one before it is), after an
// earlier run's rows or none.
func TestSinkRestoresCheckpoints(t *testing.T) {
	ps := recording(t)
	for _, tc := range []struct {
		name    string
		batch   int
		cuts    []int // where snapshots are taken
		restore int   // which of them is restored
		crashAt int   // where the sink is killed
		earlier bool  // an earlier run with checkpoints wrote the table first
	}{
		{name: "one", cuts: []int{1500}, crashAt: 2500},
		{name: "second of two", cuts: []int{1000, 2000}, restore: 1, crashAt: 3000},
		// The second checkpoint never completed: the first is restored.
		{name: "first of two", cuts: []int{1000, 2000}, restore: 0, crashAt: 3000},
		{name: "crash at snapshot", cuts: []int{1700}, crashAt: 1700},
		{name: "before anything", cuts: []int{0, 1500}, crashAt: 2000},
		{name: "small batches", batch: 50, cuts: []int{700, 1400, 2100}, restore: 1, crashAt: 2800},
		{name: "earlier run", cuts: []int{1000, 2000}, restore: 0, crashAt: 3000, earlier: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := openDB(t)
			cfg := func(table string) postgres.Config {
				return postgres.Config{Table: d.table(table), BatchSize: tc.batch}
			}
			if tc.earlier {
				for _, table := range []string{"want", "got"} {
					s := newSink(t, cfg(table))
					out := &connectortest.Emitter{}
					feed(t, s, out, ps[:300])
					connectortest.Snapshot(t, s)
					feed(t, s, out, ps[300:600])
					connectortest.Snapshot(t, s)
					require.NoError(t, s.Flush(context.Background(), out))
					d.exec(t, fmt.Sprintf("UPDATE %s SET measurement = 'earlier', series = 'earlier' || series", d.table(table)))
				}
			}

			// The run never killed.
			s := newSink(t, cfg("want"))
			out := &connectortest.Emitter{}
			feedCuts(t, s, out, ps, 0, len(ps), tc.cuts, nil)
			require.NoError(t, s.Flush(context.Background(), out))
			assert.Equal(t, out.Held(), out.Acked, "every input is acknowledged")
			assert.Empty(t, out.Failed)

			// The run killed and restored. The killed run's connections
			// are known by their application name.
			killed := cfg("got")
			app := "killed_" + d.schema[len(d.schema)-min(len(d.schema), 40):]
			killed.URL = withParam(pgtest.URL(), "application_name", app)
			s = newSink(t, killed)
			out = &connectortest.Emitter{}
			snaps := feedCuts(t, s, out, ps, 0, tc.crashAt, tc.cuts, func(i int) {
				if i >= tc.restore {
					// Rows that the restored run does not write again,
					// as a live feed's may not be: the restore deletes
					// them.
					phantom := ps[tc.cuts[i]]
					phantom.Measurement = "phantom"
					feed(t, s, out, []particle.Particle{phantom})
					require.NoError(t, s.OnTick(context.Background(), 0, out))
				}
			})
			require.Positive(t, d.count(t, "SELECT count(*) FROM "+d.table("got")+" WHERE measurement = 'phantom'"))
			// Killed: what it holds is never written, and the server
			// ends its connections.
			require.Positive(t, d.count(t, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", app))

			s = newSink(t, cfg("got"))
			require.NoError(t, s.Restore(state.NewReader(snaps[tc.restore])))
			out = &connectortest.Emitter{}
			feedCuts(t, s, out, ps, tc.cuts[tc.restore], len(ps), tc.cuts[tc.restore+1:], nil)
			require.NoError(t, s.Flush(context.Background(), out))
			assert.Equal(t, out.Held(), out.Acked, "every input is acknowledged")

			want, got := d.rows(t, d.table("want")), d.rows(t, d.table("got"))
			require.NotEmpty(t, want)
			require.Equal(t, len(want), len(got))
			for i := range want {
				require.Equal(t, want[i], got[i], "row %d", i)
			}
			if tc.earlier {
				assert.Positive(t, d.count(t, "SELECT count(*) FROM "+d.table("got")+" WHERE measurement = 'earlier' AND epoch = 1"), "the earlier run's rows are kept")
			}
		})
	}
}

// TestSinkEpochs checks the epoch column: NULL without checkpoints, then
// each row's checkpoint epoch, kept when a later epoch merges into the
// row; the snapshot writes what the sink holds, and the next call
// acknowledges it.
func TestSinkEpochs(t *testing.T) {
	d := openDB(t)
	s := newSink(t, postgres.Config{Table: d.table("readings")})
	ctx := context.Background()
	out := &connectortest.Emitter{}
	ps := readings(6)
	require.NoError(t, s.Process(ctx, ps[0], out))
	require.NoError(t, s.Flush(ctx, out))
	require.NoError(t, s.Process(ctx, ps[1], out))
	connectortest.Snapshot(t, s)
	assert.Equal(t, 2, d.count(t, "SELECT count(*) FROM "+d.table("readings")+" WHERE epoch IS NULL"), "rows before the first checkpoint have none")
	assert.Equal(t, 1, out.Acked, "the snapshot wrote the row, the input is acknowledged at the next call")
	require.NoError(t, s.Process(ctx, ps[2], out))
	assert.Equal(t, 2, out.Acked)
	merged := ps[0]
	merged.Fields = []particle.Field{{Key: "extra", Value: particle.Bool(true)}}
	require.NoError(t, s.Process(ctx, merged, out))
	connectortest.Snapshot(t, s)
	require.NoError(t, s.Process(ctx, ps[3], out))
	require.NoError(t, s.Flush(ctx, out))
	got := d.strings(t, "SELECT concat_ws(' ', n, coalesce(epoch::text, 'NULL'), coalesce(extra::text, '-')) FROM "+d.table("readings")+" ORDER BY time_ns")
	assert.Equal(t, []string{"0 NULL true", "1 NULL -", "2 1 -", "3 2 -"}, got)
	assert.Equal(t, 1, d.count(t, "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = 'readings_epoch'", d.schema))
}

// TestSinkEpochColumn checks tables made otherwise: one without the epoch
// column gets it; one whose epoch column is not a bigint is refused, and
// a particle with an epoch key is rejected.
func TestSinkEpochColumn(t *testing.T) {
	ctx := context.Background()
	d := openDB(t)
	d.exec(t, "CREATE TABLE "+d.table("old")+" (time timestamptz NOT NULL, time_ns bigint NOT NULL, series text NOT NULL, measurement text NOT NULL, PRIMARY KEY (series, time_ns))")
	s := newSink(t, postgres.Config{Table: d.table("old")})
	out := &connectortest.Emitter{}
	require.NoError(t, s.Process(ctx, reading(0), out))
	connectortest.Snapshot(t, s)
	require.NoError(t, s.Process(ctx, reading(1), out))
	require.NoError(t, s.Flush(ctx, out))
	assert.Equal(t, 1, d.count(t, "SELECT count(*) FROM "+d.table("old")+" WHERE epoch = 1"))

	bad := reading(2)
	bad.Fields = append(bad.Fields, particle.Field{Key: "epoch", Value: particle.Int(7)})
	err := s.Process(ctx, bad, out)
	require.ErrorIs(t, err, operation.ErrRejected)
	assert.ErrorContains(t, err, `key "epoch" is a reserved column`)

	d.exec(t, "CREATE TABLE "+d.table("text_epoch")+" (time timestamptz NOT NULL, time_ns bigint NOT NULL, series text NOT NULL, measurement text NOT NULL, epoch text, PRIMARY KEY (series, time_ns))")
	s = newSink(t, postgres.Config{Table: d.table("text_epoch")})
	err = s.Process(ctx, reading(0), out)
	require.ErrorIs(t, err, operation.ErrRefused)
	assert.ErrorContains(t, err, "column epoch has type text")
}

// TestSinkRestoreRefuses restores the snapshot of another table, and takes
// a snapshot of a sink two bolt instances use: both are refused.
func TestSinkRestoreRefuses(t *testing.T) {
	ctx := context.Background()
	d := openDB(t)
	s := newSink(t, postgres.Config{Table: d.table("a")})
	a, b := &connectortest.Emitter{}, &connectortest.Emitter{}
	require.NoError(t, s.Process(ctx, reading(0), a))
	snap := connectortest.Snapshot(t, s)
	err := newSink(t, postgres.Config{Table: d.table("b")}).Restore(state.NewReader(snap))
	require.ErrorIs(t, err, operation.ErrStateMismatch)
	assert.ErrorContains(t, err, "the checkpoint is of the table")

	require.NoError(t, s.Process(ctx, reading(1), b))
	err = s.Snapshot(&state.Writer{})
	assert.ErrorContains(t, err, "used by 2 bolt instances")
	assert.True(t, strings.HasPrefix(err.Error(), "postgres: checkpoint of "))
}
