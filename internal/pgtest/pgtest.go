// Package pgtest connects tests to the PostgreSQL server they need: the
// local one that scripts/test.sh starts, or the one
// SENSORSTORM_POSTGRES_URL names. A test that cannot reach it fails,
// saying how to start it: it never skips.
//
// # What it is not
//
// Not a server: it starts nothing, and gives each test a schema of its
// own on the one server, not a database. A test that restarts the server
// (Restart) waits for the tests of other packages that hold a schema, and
// they for it: go test runs packages at once.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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
// dropped, and the connection closed, when t ends. Until then, no test
// restarts the server.
func Schema(t testing.TB, schema string) *pgx.Conn {
	t.Helper()
	release, err := lockServer(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
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

// Restart restarts the local PostgreSQL cluster (pg_ctlcluster), once no
// test of another package holds a schema. It returns its error rather than
// failing a test, since it may be called from a source's goroutine.
func Restart() error {
	release, err := lockServer(true)
	if err != nil {
		return err
	}
	defer release()
	versions, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(versions) != 1 {
		return fmt.Errorf("no single local PostgreSQL cluster to restart (%d): %v", len(versions), err)
	}
	cmd := exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", versions[0].Name(), "main", "restart")
	if outp, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("restart PostgreSQL: %w: %s", err, outp)
	}
	return nil
}
