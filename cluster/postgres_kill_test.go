package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/cluster"
	"github.com/sensorstorm/sensorstorm/internal/pgtest"
	"github.com/sensorstorm/sensorstorm/jetstreamedge"
)

// roomsToTable writes issue 27's pipeline into dir with a PostgreSQL sink
// into table instead of its file, and returns the pipeline's file.
func roomsToTable(t *testing.T, dir, speed, table string) string {
	t.Helper()
	return roomsWithSink(t, dir, speed, fmt.Sprintf("sink: {postgres: {url: %q, table: %s}}", pgtest.URL(), table))
}

// roomsWithSink writes issue 27's pipeline into dir with sink instead of
// its file sink, and returns the pipeline's file.
func roomsWithSink(t *testing.T, dir, speed, sink string) string {
	t.Helper()
	file := roomsPipeline(t, dir, speed)
	spec, err := os.ReadFile(file)
	require.NoError(t, err)
	spec = bytes.Replace(spec, []byte("sink: {file: out.lp, precision: s}"), []byte(sink), 1)
	require.Contains(t, string(spec), sink)
	require.NoError(t, os.WriteFile(file, spec, 0o644))
	return file
}

// tableRows returns the rows of table as JSON, without the epoch they
// were written in, in key order.
func tableRows(t *testing.T, conn *pgx.Conn, table string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), fmt.Sprintf("SELECT (to_jsonb(r) - 'epoch')::text FROM %s r ORDER BY series, time_ns", table))
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return got
}

// SIGKILL of a worker of a pipeline with a PostgreSQL sink, started again
// under a new name: the worker that takes a unit of the killed one
// restores its checkpoint (the sink's deletes the rows written after it)
// and goes on; the table ends with one process's rows. Killed:
//   - the sink's worker while rows come out (100 times real time);
//   - the first worker, which holds most units, once every row is out,
//     while its units end (400 times real time). Before the fixes of
//     this test, the survivors never finished in about 1 of 3 runs: a
//     unit restored from its final checkpoint ended at once while its
//     Inlet, still delivering a message sent again, waited for it, or
//     returned released and never told the others that the unit ended.
func TestKilledWorkerPostgresOnce(t *testing.T) {
	ctx := context.Background()
	const schema = "test_cluster_kill"
	conn := pgtest.Schema(t, schema)

	singleProcess(t, roomsToTable(t, t.TempDir(), "max", schema+".single"))
	want := tableRows(t, conn, schema+".single")
	require.Len(t, want, 21)

	c := natstestCluster(t)
	for i, tc := range []struct {
		name, speed string
		// kill returns the worker to kill, or "" while it is not time.
		kill func(st func() cluster.Status, written int) string
	}{
		{"the sink's worker while rows come out", "100", func(st func() cluster.Status, written int) string {
			if written < 3 {
				return ""
			}
			for _, w := range st().Workers {
				if slices.Contains(w.Units, jetstreamedge.ConsumerName("out", 0)) {
					return w.Worker
				}
			}
			return ""
		}},
		{"the first worker as its units end", "400", func(_ func() cluster.Status, written int) string {
			if written < len(want) {
				return ""
			}
			return "w1"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := fmt.Sprintf("%s.cluster%d", schema, i)
			file := roomsToTable(t, t.TempDir(), tc.speed, table)
			name := fmt.Sprintf("pgkill-%d", time.Now().UnixNano())
			nc, procs := startTwo(t, c.URL(), file, name)

			written := func() int {
				var n int
				if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
					return 0 // not created yet
				}
				return n
			}
			var killed string
			require.Eventually(t, func() bool {
				killed = tc.kill(func() cluster.Status { return status(t, nc, name) }, written())
				return killed != ""
			}, 60*time.Second, 5*time.Millisecond, "time to kill")
			i := slices.IndexFunc(procs, func(p *process) bool { return p.name == killed })
			require.NotEqual(t, -1, i, "worker %q is one of the test's", killed)
			at := written()
			if err := procs[i].cmd.Process.Signal(syscall.SIGKILL); errors.Is(err, os.ErrProcessDone) {
				// Its units all ended first (a loaded machine): the
				// restart finds them ended.
				t.Logf("%s finished before the kill, with %d rows written", killed, at)
			} else {
				require.NoError(t, err)
				t.Logf("killed %s with %d rows written", killed, at)
			}
			<-procs[i].done
			procs[i] = startProcess(t, c.URL(), file, name, "w3")
			awaitProcesses(t, 180*time.Second, procs...)
			require.Equal(t, want, tableRows(t, conn, table))
		})
	}
}
