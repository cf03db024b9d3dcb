package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/postgres"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/internal/pgtest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// TestSink writes readings through a topology with acking: every tree
// completes, every reading is one row, and the table has the documented
// columns.
func TestSink(t *testing.T) {
	const n = 2000
	d := openDB(t)
	sink := newSink(t, postgres.Config{Table: d.table("readings"), BatchSize: 300})
	ps := readings(n)
	ps[7].Fields = append(ps[7].Fields, particle.Field{Key: "ok", Value: particle.Bool(true)}, particle.Field{Key: "note", Value: particle.String("hi")})
	topo, err := run(t, sink, topology.Config{}, ps, nil)
	require.NoError(t, err)

	assert.Equal(t, uint64(n), topo.Stats("gen").Acked.Load())
	assert.Equal(t, uint64(n), sink.Stats().Written.Load())
	assert.Equal(t, n, d.count(t, "SELECT count(*) FROM "+d.table("readings")))
	assert.Equal(t, n*(n-1)/2, d.count(t, "SELECT sum(n) FROM "+d.table("readings")))
	assert.Equal(t, 1, d.count(t, "SELECT count(*) FROM "+d.table("readings")+
		` WHERE series = 'reading,sensor=s1' AND sensor = 's1' AND measurement = 'reading' AND ok AND note = 'hi' AND v = 3.5 AND time = '2023-11-14 22:13:20.000007+00' AND time_ns = 1700000000000007000`))
	types := map[string]string{}
	rows, err := d.conn.Query(context.Background(), `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'readings'`, d.schema)
	require.NoError(t, err)
	for rows.Next() {
		var name, typ string
		require.NoError(t, rows.Scan(&name, &typ))
		types[name] = typ
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, map[string]string{"time": "timestamp with time zone", "time_ns": "bigint", "series": "text", "measurement": "text", "epoch": "bigint", "sensor": "text",
		"n": "bigint", "v": "double precision", "ok": "boolean", "note": "text"}, types)
}

// TestSinkRedelivery writes readings again, as after a crash: a batch
// whose rows are partly or all in the table adds only the others, and
// every tree completes.
func TestSinkRedelivery(t *testing.T) {
	d := openDB(t)
	ps := readings(500)
	for _, round := range []struct {
		ps         []particle.Particle
		duplicates uint64
	}{
		{ps[:300], 0},
		{ps, 300},
		{ps, 500},
	} {
		sink := newSink(t, postgres.Config{Table: d.table("readings"), BatchSize: 128})
		topo, err := run(t, sink, topology.Config{}, round.ps, nil)
		require.NoError(t, err)
		assert.Equal(t, uint64(len(round.ps)), topo.Stats("gen").Acked.Load())
		assert.Equal(t, round.duplicates, sink.Stats().Duplicates.Load())
		assert.Equal(t, len(round.ps), d.count(t, "SELECT count(*) FROM "+d.table("readings")))
	}
	assert.Equal(t, 500*499/2, d.count(t, "SELECT sum(n) FROM "+d.table("readings")))
}

// TestSinkTypeConflict sends a string for a double precision column: the
// particle is dead-lettered as rejected, and the others are written.
func TestSinkTypeConflict(t *testing.T) {
	const n = 100
	d := openDB(t)
	sink := newSink(t, postgres.Config{Table: d.table("readings"), BatchSize: 16})
	ps := readings(n)
	ps[50].Fields[1].Value = particle.String("warm")
	var dead connectortest.DeadLetters
	topo, err := run(t, sink, topology.Config{DeadLetters: &dead}, ps, nil)
	require.NoError(t, err)

	assert.Equal(t, uint64(n), topo.Stats("gen").Acked.Load())
	assert.Equal(t, n-1, d.count(t, "SELECT count(*) FROM "+d.table("readings")))
	require.Len(t, dead.All(), 1)
	l := dead.All()[0]
	assert.Equal(t, "rejected", l.Reason)
	assert.ErrorIs(t, l.Err, postgres.ErrColumn)
	assert.ErrorContains(t, l.Err, `"v": column has type double precision, the particle's value needs text`)
	assert.Equal(t, ps[50].Time, l.Particle.Time)
}

// TestSinkRowRefused writes rows the database refuses for their data: the
// refusal fails that row alone, which is dead-lettered with the reason,
// and the rest of its batch is written.
func TestSinkRowRefused(t *testing.T) {
	const n = 64
	for _, tt := range []struct {
		name   string
		table  string // created beforehand when set
		bad    func(p *particle.Particle)
		reason string
	}{
		{
			name: "check constraint",
			table: `(time timestamptz NOT NULL, time_ns bigint NOT NULL, series text NOT NULL, measurement text NOT NULL,
				sensor text, n bigint CHECK (n <> 40), v double precision, PRIMARY KEY (series, time_ns))`,
			bad:    func(*particle.Particle) {},
			reason: "violates check constraint",
		},
		{
			name: "series too long for the index",
			bad: func(p *particle.Particle) {
				r := rand.New(rand.NewPCG(1, 2)) // incompressible, unlike a pattern
				b := make([]byte, 20000)
				for i := range b {
					b[i] = byte('a' + r.IntN(26))
				}
				p.Tags[0].Value = string(b)
			},
			reason: "index row",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := openDB(t)
			if tt.table != "" {
				d.exec(t, "CREATE TABLE "+d.table("readings")+tt.table)
			}
			sink := newSink(t, postgres.Config{Table: d.table("readings"), BatchSize: n})
			ps := readings(n)
			tt.bad(&ps[40])
			var dead connectortest.DeadLetters
			topo, err := run(t, sink, topology.Config{DeadLetters: &dead}, ps, nil)
			require.NoError(t, err)

			assert.Equal(t, n-1, d.count(t, "SELECT count(*) FROM "+d.table("readings")))
			assert.Zero(t, d.count(t, "SELECT count(*) FROM "+d.table("readings")+" WHERE n = 40"))
			letters := dead.All()
			require.Len(t, letters, 1)
			assert.ErrorIs(t, letters[0].Err, operation.ErrRejected)
			assert.ErrorContains(t, letters[0].Err, tt.reason)
			assert.Equal(t, ps[40].Time, letters[0].Particle.Time)
			assert.Equal(t, "rejected", letters[0].Reason, "bad data, not a failure: never replayed")
			assert.Equal(t, uint64(n), topo.Stats("gen").Acked.Load(), "the refused row is acknowledged once dead-lettered")
			assert.Zero(t, topo.Stats("gen").Retried.Load())
			t.Logf("dead letter: %s: %v", letters[0].Reason, letters[0].Err)
		})
	}
}

// TestSinkConnectionLost ends the sink's connections while it writes: the
// write fails as the destination's, the engine retries it, and every
// reading is written once, none dead-lettered.
func TestSinkConnectionLost(t *testing.T) {
	const n = 1000
	d := openDB(t)
	sink := newSink(t, postgres.Config{URL: pgtest.URL() + "&application_name=sink_lost", Table: d.table("readings"), BatchSize: 50})
	ps := readings(n)
	var dead connectortest.DeadLetters
	cfg := topology.Config{DeadLetters: &dead, Destination: topology.DestinationConfig{InitialInterval: time.Millisecond, MaxInterval: 10 * time.Millisecond}}
	kills := 0
	topo, err := run(t, sink, cfg, ps, func(i int, out topology.SourceEmitter) error {
		if i%250 != 0 || i == 0 {
			return nil
		}
		// Once the sink has what came before, it is connected.
		if err := out.Flush(); err != nil {
			return err
		}
		err := waitUntil("the sink has a connection to end", func() bool {
			var n int
			err := d.conn.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'sink_lost') k`).Scan(&n)
			return err == nil && n > 0
		})
		if err != nil {
			return err
		}
		kills++
		return nil
	})
	require.NoError(t, err)

	assert.Equal(t, 3, kills)
	assert.Empty(t, dead.All())
	assert.Equal(t, uint64(n), topo.Stats("gen").Acked.Load())
	assert.Equal(t, n, d.count(t, "SELECT count(*) FROM "+d.table("readings")))
	assert.Positive(t, topo.Stats("write").DestinationRetries.Load())
}

// TestSinkServerRestart restarts the PostgreSQL server mid-stream: the sink
// retries until it is back, and every reading is written once, none
// dead-lettered.
func TestSinkServerRestart(t *testing.T) {
	const n = 1000
	d := openDB(t)
	sink := newSink(t, postgres.Config{Table: d.table("readings"), BatchSize: 50})
	var dead connectortest.DeadLetters
	cfg := topology.Config{DeadLetters: &dead, Destination: topology.DestinationConfig{InitialInterval: time.Millisecond, MaxInterval: 50 * time.Millisecond}}
	topo, err := run(t, sink, cfg, readings(n), func(i int, out topology.SourceEmitter) error {
		if i != n/2 {
			return nil
		}
		if err := out.Flush(); err != nil {
			return err
		}
		if err := waitUntil("the sink wrote a batch", func() bool { return sink.Stats().Batches.Load() > 0 }); err != nil {
			return err
		}
		return d.restartServer()
	})
	require.NoError(t, err)

	assert.Empty(t, dead.All())
	assert.Equal(t, uint64(n), topo.Stats("gen").Acked.Load())
	assert.Equal(t, n, d.count(t, "SELECT count(*) FROM "+d.table("readings")))
	assert.Equal(t, n*(n-1)/2, d.count(t, "SELECT sum(n) FROM "+d.table("readings")))
}

// TestSinkUnreachable gives up on a database that does not answer: the run
// stops with topology.ErrGaveUp, nothing acknowledged or dead-lettered.
func TestSinkUnreachable(t *testing.T) {
	sink := newSink(t, postgres.Config{URL: "postgres://postgres@127.0.0.1:1/postgres?connect_timeout=1", Table: "readings"})
	var dead connectortest.DeadLetters
	cfg := topology.Config{DeadLetters: &dead, Destination: topology.DestinationConfig{InitialInterval: time.Millisecond, MaxInterval: 10 * time.Millisecond, GiveUpAfter: 200 * time.Millisecond}}
	topo, err := run(t, sink, cfg, []particle.Particle{reading(0), reading(1)}, nil)
	require.ErrorIs(t, err, topology.ErrGaveUp)
	assert.ErrorIs(t, err, operation.ErrDestination)
	assert.Empty(t, dead.All())
	assert.Zero(t, topo.Stats("gen").Acked.Load())
}

// TestSinkMerge writes points of one series that share a time, in one
// batch and one point a batch: the fields of points at the same
// nanosecond merge into one row as InfluxDB merges them, later values
// winning; points nanoseconds apart are rows of their own; a point
// written again changes nothing and is counted as a duplicate.
func TestSinkMerge(t *testing.T) {
	const at = 1_700_000_000_000_000_000
	point := func(ns int64, fields ...particle.Field) particle.Particle {
		return particle.Particle{Time: at + ns, Measurement: "env", Tags: []particle.Tag{{Key: "room", Value: "a"}}, Fields: fields}
	}
	temp := func(v float64) particle.Field { return particle.Field{Key: "temp", Value: particle.Float(v)} }
	hum := func(v int64) particle.Field { return particle.Field{Key: "hum", Value: particle.Int(v)} }
	for _, tc := range []struct {
		name                        string
		ps                          []particle.Particle
		rows                        string // time_ns offset, temp, hum of each row, by time
		written, merged, duplicates uint64
	}{
		{
			name:    "fields merge", // of one point
			ps:      []particle.Particle{point(0, temp(21.5)), point(0, hum(40))},
			rows:    "0 21.5 40",
			written: 1, merged: 1,
		},
		{
			name:    "later wins",
			ps:      []particle.Particle{point(0, temp(21.5), hum(40)), point(0, temp(22))},
			rows:    "0 22 40",
			written: 1, merged: 1,
		},
		{
			name:    "duplicate", // the same point again
			ps:      []particle.Particle{point(0, temp(21.5), hum(40)), point(0, hum(40), temp(21.5)), point(0, temp(21.5))},
			rows:    "0 21.5 40",
			written: 1, duplicates: 2,
		},
		{
			name:    "ns apart", // in one microsecond: rows of their own
			ps:      []particle.Particle{point(0, temp(1)), point(1, temp(2)), point(999, hum(3))},
			rows:    "0 1 NULL|1 2 NULL|999 NULL 3",
			written: 3,
		},
	} {
		for _, batch := range []int{1, 100} {
			t.Run(fmt.Sprintf("%s/batch=%d", tc.name, batch), func(t *testing.T) {
				d := openDB(t)
				sink := newSink(t, postgres.Config{Table: d.table("env"), BatchSize: batch})
				var out connectortest.Emitter
				for _, p := range tc.ps {
					require.NoError(t, sink.Process(context.Background(), p, &out))
				}
				require.NoError(t, sink.Flush(context.Background(), &out))
				assert.Equal(t, len(tc.ps), out.Acked, "every point is acknowledged")
				assert.Empty(t, out.Failed)
				got := d.strings(t, fmt.Sprintf(
					`SELECT concat_ws(' ', time_ns - %d, coalesce(temp::text, 'NULL'), coalesce(hum::text, 'NULL')) FROM %s ORDER BY time_ns`, int64(at), d.table("env")))
				assert.Equal(t, tc.rows, strings.Join(got, "|"))
				st := sink.Stats()
				assert.Equal(t, []uint64{tc.written, tc.merged, tc.duplicates}, []uint64{st.Written.Load(), st.Merged.Load(), st.Duplicates.Load()},
					"written, merged, duplicates")
			})
		}
	}
}

// TestSinkNanoseconds writes 3,000 readings of one series inside 3 µs,
// which timestamptz cannot tell apart: each is a row.
func TestSinkNanoseconds(t *testing.T) {
	const n = 3000
	d := openDB(t)
	sink := newSink(t, postgres.Config{Table: d.table("readings"), BatchSize: 500})
	ps := make([]particle.Particle, n)
	for i := range ps {
		ps[i] = reading(0)
		ps[i].Time += int64(i)
		ps[i].Fields = []particle.Field{{Key: "n", Value: particle.Int(int64(i))}}
	}
	topo, err := run(t, sink, topology.Config{}, ps, nil)
	require.NoError(t, err)
	assert.Equal(t, uint64(n), topo.Stats("gen").Acked.Load())
	assert.Equal(t, n, d.count(t, "SELECT count(*) FROM "+d.table("readings")))
	assert.Equal(t, 3, d.count(t, "SELECT count(DISTINCT time) FROM "+d.table("readings")))
	assert.Equal(t, uint64(n), sink.Stats().Written.Load())
	assert.Zero(t, sink.Stats().Duplicates.Load())
}

// TestSinkRefusedStopsAtOnce writes where retrying cannot help: the run
// stops at once with the server's message, not after the give-up time,
// with nothing acknowledged or dead-lettered; an outage is retried.
func TestSinkRefusedStopsAtOnce(t *testing.T) {
	tests := []struct {
		name, url, table, message string
	}{
		{"no such schema", pgtest.URL(), "nosuchschema.readings", "nosuchschema"},
		{"no such database", "postgres://postgres@127.0.0.1:5432/nosuchdb?sslmode=disable", "readings", `database "nosuchdb" does not exist`},
		{"no such role", "postgres://nosuchrole@127.0.0.1:5432/postgres?sslmode=disable", "readings", "nosuchrole"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url
			if os.Getenv("SENSORSTORM_POSTGRES_URL") != "" && tt.url != pgtest.URL() {
				t.Skip("a server of SENSORSTORM_POSTGRES_URL: its names differ")
			}
			sink := newSink(t, postgres.Config{URL: url, Table: tt.table})
			var dead connectortest.DeadLetters
			// A give-up time no test waits for: only refusing stops it.
			cfg := topology.Config{DeadLetters: &dead, Destination: topology.DestinationConfig{GiveUpAfter: time.Hour}}
			topo, err := run(t, sink, cfg, []particle.Particle{reading(0), reading(1)}, nil)
			require.ErrorIs(t, err, topology.ErrGaveUp)
			assert.ErrorIs(t, err, operation.ErrRefused)
			assert.ErrorContains(t, err, tt.message)
			assert.Empty(t, dead.All())
			assert.Zero(t, topo.Stats("gen").Acked.Load())
		})
	}
}
