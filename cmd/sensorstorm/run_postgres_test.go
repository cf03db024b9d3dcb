package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
)

// postgresURL is the server the PostgreSQL tests use (scripts/test.sh
// starts it).
func postgresURL() string {
	if u := os.Getenv("SENSORSTORM_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// TestRunPostgresKill runs a pipeline from InfluxDB writes (the official
// Go client, batching with retries) to a PostgreSQL table, kills the
// sensorstorm process with SIGKILL mid-stream and starts it again: the
// table ends with every point exactly once, none lost (the spool and the
// client's retries) and none twice (rows are unique on series and time,
// whatever is delivered again).
func TestRunPostgresKill(t *testing.T) {
	const n = 10000
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, postgresURL())
	require.NoError(t, err, "PostgreSQL is not reachable at %s: run scripts/test.sh, which starts it, or set SENSORSTORM_POSTGRES_URL", postgresURL())
	defer conn.Close(ctx)
	const schema = "test_run_postgres_kill"
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE; CREATE SCHEMA "+schema)
	require.NoError(t, err)
	defer func() {
		_, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		assert.NoError(t, err)
	}()

	bin := buildBinary(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	file := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, `
sources:
  - name: influx
    http: {addr: %q, state_dir: state}
bolts:
  - name: store
    input: {from: influx, grouping: global}
    window: 100ms
    late: pass
    sink:
      postgres: {url: %q, table: %s.readings, batch_size: 500}
`, addr, postgresURL(), schema), 0o644))
	start := func() (*exec.Cmd, *mosquittotest.LockedBuffer) {
		cmd := exec.Command(bin, "run", file)
		stderr := &mosquittotest.LockedBuffer{}
		cmd.Stderr = stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		waitUntil(t, 20*time.Second, "run listening", func() bool { return strings.Contains(stderr.String(), "httpwrite: listening") })
		return cmd, stderr
	}
	rows := func(where string) int {
		var c int
		err := conn.QueryRow(ctx, "SELECT count(*) FROM "+schema+".readings "+where).Scan(&c)
		if err != nil {
			return 0 // not created yet
		}
		return c
	}
	first, _ := start()

	w := startInfluxWriter(t, addr, n)

	waitUntil(t, 60*time.Second, "rows mid-stream", func() bool { return rows("") >= n/4 })
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	killedAt := rows("")

	second, stderr := start()
	w.finish()
	waitUntil(t, 60*time.Second, "every point in the table", func() bool {
		w.api.Flush()
		return rows("WHERE n >= 0") >= n
	})
	require.NoError(t, second.Process.Signal(syscall.SIGTERM))
	require.NoError(t, second.Wait(), "exit status after SIGTERM: %s", stderr.String())

	assert.Equal(t, n, rows("WHERE n >= 0"), "rows")
	var distinct, lo, hi int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(DISTINCT n), min(n), max(n) FROM "+schema+".readings WHERE n >= 0").Scan(&distinct, &lo, &hi))
	assert.Equal(t, []int{n, 0, n - 1}, []int{distinct, lo, hi}, "one row per point")
	t.Logf("killed with %d rows in the table; %d rows after the restart, one per point", killedAt, n)
}
