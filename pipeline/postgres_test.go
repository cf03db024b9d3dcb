package pipeline_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/pipeline"
)

// TestPostgresSink runs a pipeline that stores a recording in PostgreSQL
// (the local server that scripts/test.sh starts): one row per reading,
// every tree acknowledged.
func TestPostgresSink(t *testing.T) {
	const url = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err, "PostgreSQL is not reachable at %s: run scripts/test.sh, which starts it", url)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS test_pipeline CASCADE; CREATE SCHEMA test_pipeline")
	require.NoError(t, err)
	defer func() {
		_, err := conn.Exec(ctx, "DROP SCHEMA test_pipeline CASCADE")
		assert.NoError(t, err)
	}()

	p, err := pipeline.Parse(fmt.Appendf(nil, `
sources:
  - name: wsn
    file: {paths: [../testdata/library1-r1.lp], speed: max}
bolts:
  - name: store
    input: {from: wsn, grouping: global}
    sink:
      postgres: {url: %q, table: test_pipeline.readings, batch_size: 1000}
`, url), "p.yaml")
	require.NoError(t, err)
	topo, err := p.Build(pipeline.Options{})
	require.NoError(t, err)
	require.NoError(t, topo.Run(ctx))

	var rows int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM test_pipeline.readings").Scan(&rows))
	assert.Equal(t, 7563, rows)
	assert.Equal(t, uint64(rows), topo.Stats("store").Processed.Load())
	assert.Zero(t, topo.Stats("store").Errors.Load())
}

func TestParsePostgresSinkErrors(t *testing.T) {
	testParseErrors(t, good, []parseErrorCase{
		{"no table", `sink: {file: "-"}`, `sink: {postgres: {url: "postgres://localhost/db"}}`, []string{"p.yaml:13:", "no table"}},
		{"no url", `sink: {file: "-"}`, `sink: {postgres: {table: readings}}`, []string{"url is empty"}},
		{"two sinks", `sink: {file: "-"}`, `sink: {file: "-", postgres: {url: x, table: t}}`, []string{"sink: set one type, not file and postgres (add a bolt for each other)"}},
		{"unknown key", `sink: {file: "-"}`, `sink: {postgres: {url: x, table: t, tabel: u}}`, []string{"tabel"}},
	})
}
