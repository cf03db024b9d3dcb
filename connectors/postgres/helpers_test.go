package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/postgres"
	"github.com/sensorstorm/sensorstorm/internal/pgtest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// db is a test's own schema on the server.
type db struct {
	conn   *pgx.Conn
	schema string
}

// openDB connects to the server and creates a schema for t, dropped when t
// ends. It fails t when the server cannot be reached: the tests need it.
func openDB(t testing.TB) *db {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL())
	require.NoError(t, err, "PostgreSQL is not reachable at %s: run scripts/test.sh, which starts it, or set SENSORSTORM_POSTGRES_URL", pgtest.URL())
	schema := "test_" + strings.ToLower(strings.NewReplacer("/", "_", "=", "_", "-", "_").Replace(t.Name()))
	d := &db{conn: conn, schema: schema}
	d.exec(t, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	d.exec(t, "CREATE SCHEMA "+schema)
	// Not pgtest.Schema: restartServer replaces the connection.
	t.Cleanup(func() {
		d.exec(t, "DROP SCHEMA "+schema+" CASCADE")
		require.NoError(t, d.conn.Close(ctx))
	})
	return d
}

// restartServer restarts the local PostgreSQL cluster and connects d
// again. It may be called from a source's goroutine, so it returns its
// error rather than failing a test.
func (d *db) restartServer() error {
	if err := pgtest.Restart(); err != nil {
		return err
	}
	ctx := context.Background()
	_ = d.conn.Close(ctx) // the server ended it
	var err error
	d.conn, err = pgx.Connect(ctx, pgtest.URL())
	return err
}

// waitUntil calls cond until it is true, for at most 10 s. It may be
// called from a source's goroutine, so it returns an error rather than
// failing a test.
func waitUntil(what string, cond func() bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond) // polling a condition, not timing
	}
	return nil
}

func (d *db) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	_, err := d.conn.Exec(context.Background(), sql, args...)
	require.NoError(t, err, sql)
}

func (d *db) count(t testing.TB, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, d.conn.QueryRow(context.Background(), sql, args...).Scan(&n), sql)
	return n
}

// strings returns the one text column of the rows of a query.
func (d *db) strings(t testing.TB, sql string, args ...any) []string {
	t.Helper()
	rows, err := d.conn.Query(context.Background(), sql, args...)
	require.NoError(t, err, sql)
	var all []string
	for rows.Next() {
		var r string
		require.NoError(t, rows.Scan(&r))
		all = append(all, r)
	}
	require.NoError(t, rows.Err(), sql)
	return all
}

// table is the name of a table in d's schema.
func (d *db) table(name string) string { return d.schema + "." + name }

// newSink returns a Sink on table of d, closed when t ends.
func newSink(t testing.TB, cfg postgres.Config) *postgres.Sink {
	t.Helper()
	if cfg.URL == "" {
		cfg.URL = pgtest.URL()
	}
	s, err := postgres.NewSink(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// reading returns the i-th test reading: sensor s<i%3>, an int and a float
// field, one microsecond apart.
func reading(i int) particle.Particle {
	return particle.Particle{
		Time:        1_700_000_000_000_000_000 + int64(i)*1000,
		Measurement: "reading",
		Tags:        []particle.Tag{{Key: "sensor", Value: fmt.Sprint("s", i%3)}},
		Fields:      []particle.Field{{Key: "n", Value: particle.Int(int64(i))}, {Key: "v", Value: particle.Float(float64(i) / 2)}},
	}
}

// readings returns the first n test readings.
func readings(n int) []particle.Particle {
	ps := make([]particle.Particle, n)
	for i := range ps {
		ps[i] = reading(i)
	}
	return ps
}

// run runs a topology with acking in which a source emits ps into sink,
// calling before(i, out) before particle i when set, and returns it once it
// stopped with Run's error.
func run(t testing.TB, sink *postgres.Sink, cfg topology.Config, ps []particle.Particle, before func(i int, out topology.SourceEmitter) error) (*topology.Topology, error) {
	t.Helper()
	cfg.Acking.Enabled = true
	topo, err := topology.New(cfg)
	require.NoError(t, err)
	topo.AddSource("gen", topology.Single(topology.Retaining(func(ctx context.Context, out topology.SourceEmitter) error {
		for i, p := range ps {
			if before != nil {
				if err := before(i, out); err != nil {
					return err
				}
			}
			if err := out.EmitTracked(p, uint64(i)); err != nil {
				return err
			}
		}
		return nil
	})), topology.SourceConfig{})
	topo.AddBolt("write", operation.Stateless(sink), topology.BoltConfig{}).Input("gen", topology.Global())
	return topo, topo.Run(context.Background())
}
