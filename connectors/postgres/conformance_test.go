package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/postgres"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/internal/pgtest"
	"github.com/sensorstorm/sensorstorm/operation"
)

func TestSinkConformance(t *testing.T) {
	connectortest.TestSink(t, connectortest.Features{}, func(t *testing.T) connectortest.SinkHarness {
		d := openDB(t)
		h := &sinkHarness{d: d, role: d.schema}
		d.exec(t, "CREATE ROLE "+h.role+" LOGIN")
		t.Cleanup(func() { d.exec(t, "DROP OWNED BY "+h.role+"; DROP ROLE "+h.role) })
		d.exec(t, "GRANT ALL ON SCHEMA "+d.schema+" TO "+h.role)
		return h
	})
}

// sinkHarness runs a Sink that logs in as a role of its own, whose
// sessions Break ends and whose connections it refuses as a server at its
// connection limit does: a database that went away for a while. (A role
// not permitted to log in is refused for good.)
type sinkHarness struct {
	d    *db
	role string
}

func (h *sinkHarness) NewSink(t testing.TB) operation.Operation {
	u, err := url.Parse(pgtest.URL())
	require.NoError(t, err)
	u.User = url.User(h.role)
	return newSink(t, postgres.Config{URL: u.String(), Table: h.d.table("readings"), BatchSize: 100})
}

func (h *sinkHarness) Read(t testing.TB) []int {
	rows, err := h.d.conn.Query(context.Background(), "SELECT n FROM "+h.d.table("readings"))
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "42P01" {
		return nil // the sink has not created the table yet
	}
	require.NoError(t, err)
	ns, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	return ns
}

func (h *sinkHarness) Break(t testing.TB) {
	h.d.exec(t, "ALTER ROLE "+h.role+" CONNECTION LIMIT 0")
	h.d.exec(t, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", h.role)
}

func (h *sinkHarness) Mend(t testing.TB) { h.d.exec(t, "ALTER ROLE "+h.role+" CONNECTION LIMIT -1") }
