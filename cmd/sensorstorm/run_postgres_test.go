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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/internal/pgtest"
)

// TestRunPostgresKill runs a pipeline from InfluxDB writes (the official
// Go client, batching with retries) to a PostgreSQL table, kills the
// sensorstorm process with SIGKILL mid-stream and starts it again: the
// table ends with every point exactly once, none lost (the spool and the
// client's retries) and none twice (rows are unique on series and time,
// whatever is delivered again).
func TestRunPostgresKill(t *testing.T) {
	const n = 10000
	ctx := context.Background()
	const schema = "test_run_postgres_kill"
	conn := pgtest.Schema(t, schema)

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
`, addr, pgtest.URL(), schema), 0o644))
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

// TestRunPostgresSummary replays a recording into a PostgreSQL table that
// already holds some of its points, and points that share a series and a
// time: the fields of one point merge into its row, readings nanoseconds
// apart are rows of their own, and a point the table holds already is
// the one thing dropped, counted as a duplicate in the summary.
func TestRunPostgresSummary(t *testing.T) {
	ctx := context.Background()
	const schema = "test_run_postgres_summary"
	conn := pgtest.Schema(t, schema)
	dir := t.TempDir()
	rec := filepath.Join(dir, "env.lp")
	require.NoError(t, os.WriteFile(rec, []byte(strings.Join([]string{
		"env,room=a temp=21.5 1700000000000000000",
		"env,room=a hum=40i 1700000000000000000",
		"env,room=a temp=21.6 1700000000000000001",
		"env,room=a temp=21.7 1700000000000000002",
	}, "\n")+"\n"), 0o644))
	file := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, `
sources:
  - name: rec
    file: {paths: [env.lp]}
bolts:
  - name: store
    input: rec
    sink:
      postgres: {url: %q, table: %s.env}
`, pgtest.URL(), schema), 0o644))
	for _, tc := range []struct{ name, summary string }{
		{"first run", "summary: read=4 emitted=4 late=0 invalid=0 skipped=0 outside=0 duplicates=0 refused=0"},
		{"the same again", "summary: read=4 emitted=0 late=0 invalid=0 skipped=0 outside=0 duplicates=4 refused=0"},
	} {
		var stdout, stderr strings.Builder
		require.Equal(t, exitOK, run(ctx, []string{"run", file}, &stdout, &stderr), "%s: %s", tc.name, stderr.String())
		assert.Equal(t, tc.summary, lastLine(stderr.String()), tc.name)
		parseSummary(t, stderr.String())
	}
	var rows []string
	r, err := conn.Query(ctx, "SELECT concat_ws(' ', time_ns - 1700000000000000000, temp, hum) FROM "+schema+".env ORDER BY time_ns")
	require.NoError(t, err)
	for r.Next() {
		var s string
		require.NoError(t, r.Scan(&s))
		rows = append(rows, s)
	}
	require.NoError(t, r.Err())
	assert.Equal(t, []string{"0 21.5 40", "1 21.6", "2 21.7"}, rows)
}
