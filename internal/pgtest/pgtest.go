// Package pgtest connects tests to the PostgreSQL server they need: the
// local one that scripts/test.sh starts, or the one
// SENSORSTORM_POSTGRES_URL names. A test that cannot reach it fails,
// saying how to start it: it never skips.
//
// # What it is not
//
// Not a server: it starts nothing, and gives each test a schema of its
// own on the one server, not a database.
package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// URL is the server the tests use: SENSORSTORM_POSTGRES_URL, or the local
// one that scripts/test.sh starts.
func URL() string {
	if u := os.Getenv("SENSORSTORM_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// Schema connects to the server and creates schema afresh; the schema is
// dropped, and the connection closed, when t ends.
func Schema(t testing.TB, schema string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, URL())
	if err != nil {
		t.Fatalf("PostgreSQL is not reachable at %s: run scripts/test.sh, which starts it, or set SENSORSTORM_POSTGRES_URL: %v", URL(), err)
	}
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE; CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
		if err := conn.Close(ctx); err != nil {
			t.Errorf("closing the connection: %v", err)
		}
	})
	return conn
}
