package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/pipeline"
)

// CheckConnections gives a probe per source and sink, in file order:
// file sinks writable without being created, the types it has no check
// for skipped, an existing output file opened unchanged.
func TestCheckConnectionsWithoutServers(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kept.lp"), []byte("kept\n"), 0o644))
	const file = `sources:
  - name: in
    count: {measurement: m, n: 3}
bolts:
  - name: new
    input: in
    sink: {file: new.lp}
  - name: kept
    input: in
    sink: {file: kept.lp}
  - name: stdout
    input: in
    sink: {file: "-"}
  - name: influx
    input: in
    sink: {influxdb: {url: "http://127.0.0.1:8086/write?db=db"}}
  - name: rec
    input: in
    sink: {record: {name: connect}}
`
	p, err := pipeline.Parse([]byte(file), filepath.Join(dir, "p.yaml"))
	require.NoError(t, err)
	assert.Equal(t, []pipeline.Probe{
		{Component: "count source 'in'", Found: "not checked: validate --connect has no check for this type", Skipped: true},
		{Component: "file sink 'new'", Found: "directory " + dir + " writable"},
		{Component: "file sink 'kept'", Found: filepath.Join(dir, "kept.lp") + " writable (it exists: a run rewrites it)"},
		{Component: "file sink 'stdout'", Found: "standard output"},
		{Component: "influxdb sink 'influx'", Found: "not checked: validate --connect has no check for this type", Skipped: true},
		{Component: "record sink 'rec'", Found: "not checked: validate --connect has no check for this type", Skipped: true},
	}, p.CheckConnections(context.Background(), ""))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing created beside kept.lp")
	kept, err := os.ReadFile(filepath.Join(dir, "kept.lp"))
	require.NoError(t, err)
	assert.Equal(t, "kept\n", string(kept))
}
