package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/postgres"
	"github.com/sensorstorm/sensorstorm/internal/pgtest"
	"github.com/sensorstorm/sensorstorm/operation"
)

// TestCheck checks tables against a real server: what Check accepts, and
// for what it refuses, an error that names the database, schema and
// table, says which check failed and whether retrying can help.
func TestCheck(t *testing.T) {
	d := openDB(t)
	role := d.schema + "_writer"
	d.exec(t, fmt.Sprintf("DROP ROLE IF EXISTS %s; CREATE ROLE %[1]s LOGIN", role))
	t.Cleanup(func() { d.exec(t, fmt.Sprintf("DROP OWNED BY %s; DROP ROLE %[1]s", role)) })
	d.exec(t, fmt.Sprintf("GRANT USAGE ON SCHEMA %s TO %s", d.schema, role))
	const sinkTable = `(time timestamptz NOT NULL, time_ns bigint NOT NULL, series text NOT NULL, measurement text NOT NULL, epoch bigint, PRIMARY KEY (series, time_ns))`
	d.exec(t, "CREATE TABLE "+d.table("made")+" "+sinkTable)
	d.exec(t, "CREATE TABLE "+d.table("granted")+" "+sinkTable)
	d.exec(t, fmt.Sprintf("GRANT INSERT, SELECT, UPDATE ON %s TO %s", d.table("granted"), role))
	d.exec(t, "CREATE TABLE "+d.table("readonly")+" "+sinkTable)
	d.exec(t, fmt.Sprintf("GRANT SELECT ON %s TO %s", d.table("readonly"), role))
	d.exec(t, "CREATE TABLE "+d.table("json")+` (time timestamptz NOT NULL, time_ns bigint NOT NULL, series text NOT NULL, measurement text NOT NULL,
		doc jsonb, created timestamptz DEFAULT now(), PRIMARY KEY (series, time_ns))`)
	d.exec(t, "CREATE TABLE "+d.table("unkeyed")+` (time timestamptz NOT NULL, time_ns bigint NOT NULL, series text NOT NULL, measurement text NOT NULL)`)
	d.exec(t, "CREATE TABLE "+d.table("old")+` (time timestamptz NOT NULL, series text NOT NULL, measurement text NOT NULL, PRIMARY KEY (series, time))`)
	d.exec(t, "CREATE VIEW "+d.table("view")+" AS SELECT * FROM "+d.table("made"))

	tests := []struct {
		name, url, table string
		want             string // Checked.String, when no error
		wantErr          error  // besides operation.ErrRefused
		inErr            string
		retry            bool // an outage: ErrDestination, not ErrRefused
	}{
		{name: "table missing", table: d.table("new"), want: "table " + d.table("new") + " missing (the role may create it)"},
		{name: "table made", table: d.table("made"), want: "table " + d.table("made") + " (insert allowed)"},
		{name: "unqualified table in the current schema", table: "made", url: withParam(pgtest.URL(), "search_path", d.schema), want: "table " + d.table("made") + " (insert allowed)"},
		{name: "granted, not the owner", table: d.table("granted"), url: withUser(pgtest.URL(), role),
			want: "table " + d.table("granted") + " (insert allowed; the role does not own it: a key without a column stops the run)"},
		{name: "no privileges", table: d.table("made"), url: withUser(pgtest.URL(), role), wantErr: postgres.ErrPrivilege, inErr: `may not INSERT, SELECT, UPDATE on ` + d.table("made")},
		{name: "no insert privilege", table: d.table("readonly"), url: withUser(pgtest.URL(), role), wantErr: postgres.ErrPrivilege,
			inErr: fmt.Sprintf(`role %s may not INSERT, UPDATE on %s`, role, d.table("readonly"))},
		{name: "no create privilege", table: d.table("new"), url: withUser(pgtest.URL(), role), wantErr: postgres.ErrPrivilege, inErr: "no CREATE on schema " + d.schema},
		{name: "missing schema", table: "nosuchschema.readings", wantErr: postgres.ErrNoSchema, inErr: `postgres: database "postgres", table nosuchschema.readings: postgres: no schema: schema nosuchschema does not exist: create it (CREATE SCHEMA "nosuchschema")`},
		{name: "missing database", table: "metrics.readings", url: withDatabase(pgtest.URL(), "nodb_check"),
			inErr: `database "nodb_check", table metrics.readings: connect: failed to connect to ` + "`user=postgres database=nodb_check`"},
		{name: "missing database, whole message", table: "metrics.readings", url: withDatabase(pgtest.URL(), "nodb_check"), inErr: `database "nodb_check" does not exist (SQLSTATE 3D000)`},
		{name: "column of another type", table: d.table("json"), wantErr: postgres.ErrTable, inErr: "doc has type jsonb, the sink writes text, double precision, bigint or boolean"},
		{name: "no unique index", table: d.table("unkeyed"), wantErr: postgres.ErrTable, inErr: "no unique index on (series, time_ns)"},
		{name: "no time_ns", table: d.table("old"), wantErr: postgres.ErrNoTimeNS},
		{name: "a view", table: d.table("view"), wantErr: postgres.ErrTable, inErr: "is not a table"},
		{name: "server away", table: "readings", url: closedPortURL(t), retry: true, inErr: "connect: failed to connect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.url == "" {
				tt.url = pgtest.URL()
			}
			got, err := postgres.Check(context.Background(), postgres.Config{URL: tt.url, Table: tt.table})
			if tt.want != "" {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got.String())
				return
			}
			require.Error(t, err)
			var ce *postgres.CheckError
			require.ErrorAs(t, err, &ce)
			assert.ErrorIs(t, err, operation.ErrDestination)
			assert.Equal(t, !tt.retry, errors.Is(err, operation.ErrRefused), "refused for good: %v", err)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
			}
			assert.Contains(t, err.Error(), tt.inErr)
		})
	}
}

// withUser returns u with the user name user and no password.
func withUser(u, user string) string {
	p, _ := url.Parse(u)
	p.User = url.User(user)
	return p.String()
}

// withDatabase returns u naming the database db.
func withDatabase(u, db string) string {
	p, _ := url.Parse(u)
	p.Path = "/" + db
	return p.String()
}

// closedPortURL returns the URL of a loopback port nothing listens on.
func closedPortURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable&connect_timeout=5"
}
