package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/internal/pgtest"
)

// TestValidateConnect validates pipelines with --connect against a real
// PostgreSQL server and a real Mosquitto: one line per source and sink,
// exit 1 when any check fails, and nothing written: no table, no output
// file, no session of the pipeline's client ids.
func TestValidateConnect(t *testing.T) {
	// Registered first, checked last: after the broker stopped. Other
	// tests' goroutines still winding down are not this test's.
	others := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, others) })
	const schema = "test_validate_connect"
	conn := pgtest.Schema(t, schema)
	ctx := context.Background()
	role := schema + "_reader"
	_, err := conn.Exec(ctx, fmt.Sprintf(`DROP ROLE IF EXISTS %[1]s; CREATE ROLE %[1]s LOGIN; GRANT USAGE ON SCHEMA %[2]s TO %[1]s;
		CREATE TABLE %[2]s.locked (time timestamptz NOT NULL, time_ns bigint NOT NULL, series text NOT NULL, measurement text NOT NULL, PRIMARY KEY (series, time_ns));
		GRANT SELECT ON %[2]s.locked TO %[1]s`, role, schema))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := conn.Exec(ctx, fmt.Sprintf("DROP OWNED BY %[1]s; DROP ROLE %[1]s", role))
		assert.NoError(t, err)
	})
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	closed := "tcp://" + freeAddr(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	recording, err := filepath.Abs("../../testdata/library1-r1.lp")
	require.NoError(t, err)
	asRole, err := url.Parse(pgtest.URL())
	require.NoError(t, err)
	asRole.User = url.User(role)
	noDB, err := url.Parse(pgtest.URL())
	require.NoError(t, err)
	noDB.Path = "/nodb_validate"

	// sink is a pipeline reading the recording into the sink given.
	sink := func(s string) string {
		return fmt.Sprintf("sources:\n  - name: rec\n    file: {paths: [%s]}\nbolts:\n  - name: db\n    input: {from: rec, grouping: global}\n    sink: %s\n", recording, s)
	}
	tests := []struct {
		name     string
		pipeline string
		want     []string // stdout's lines, the file's directory as DIR
		inStderr string
	}{{
		name: "a recording into a table and a file",
		pipeline: fmt.Sprintf(`sources:
  - name: rec
    file: {paths: [%s]}
bolts:
  - name: db
    input: {from: rec, grouping: global}
    sink: {postgres: {url: %q, table: %s.readings}}
  - name: out
    input: {from: rec, grouping: global}
    sink: {file: out/readings.lp}
`, recording, pgtest.URL(), schema),
		want: []string{
			"ok file source 'rec': recording readable",
			"ok postgres sink 'db': table " + schema + ".readings missing (the role may create it)",
			"ok file sink 'out': directory DIR/out writable",
			"DIR/p.yaml: ok: 1 sources, 2 bolts",
		},
	}, {
		name: "live feeds to a broker",
		pipeline: fmt.Sprintf(`sources:
  - name: feed
    mqtt: {broker: %s, topics: [sensors/#], client_id: validate-feed, mode: receipt}
  - name: influx
    http: {addr: %q, state_dir: state}
bolts:
  - name: publish
    inputs: [{from: feed, grouping: global}, {from: influx, grouping: global}]
    sink: {mqtt: {broker: %[1]s, topic: "results/{node}", client_id: validate-publish}}
`, broker.URL(), freeAddr(t)),
		want: []string{
			"ok mqtt source 'feed': broker " + broker.URL() + " accepted the connection",
			"ok http source 'influx': address ADDR free",
			"ok mqtt sink 'publish': broker " + broker.URL() + " accepted the connection",
			"DIR/p.yaml: ok: 2 sources, 1 bolts",
		},
	}, {
		name:     "missing schema",
		pipeline: sink(fmt.Sprintf("{postgres: {url: %q, table: nosuch_validate.readings}}", pgtest.URL())),
		want: []string{
			"ok file source 'rec': recording readable",
			`fail postgres sink 'db': postgres: database "postgres", table nosuch_validate.readings: postgres: no schema: schema nosuch_validate does not exist: create it (CREATE SCHEMA "nosuch_validate") or name another in table`,
		},
		inStderr: "DIR/p.yaml: 1 of 2 components failed their checks",
	}, {
		name:     "missing database",
		pipeline: sink(fmt.Sprintf("{postgres: {url: %q, table: metrics.readings}}", noDB)),
		want: []string{
			"ok file source 'rec': recording readable",
			`fail postgres sink 'db': postgres: database "nodb_validate", table metrics.readings: connect: failed to connect to ` +
				"`user=postgres database=nodb_validate`: 127.0.0.1:5432 (127.0.0.1): server error: FATAL: database \"nodb_validate\" does not exist (SQLSTATE 3D000)",
		},
		inStderr: "1 of 2 components failed",
	}, {
		name:     "no insert privilege",
		pipeline: sink(fmt.Sprintf("{postgres: {url: %q, table: %s.locked}}", asRole, schema)),
		want: []string{
			"ok file source 'rec': recording readable",
			fmt.Sprintf(`fail postgres sink 'db': postgres: database "postgres", table %[1]s.locked: postgres: privilege missing: role %[2]s may not INSERT, UPDATE on %[1]s.locked; `+
				`the sink inserts rows, and selects and updates them to merge a point delivered again (GRANT INSERT, SELECT, UPDATE ON "%[1]s"."locked" TO "%[2]s")`, schema, role),
		},
		inStderr: "1 of 2 components failed",
	}, {
		name:     "broker away",
		pipeline: sink(fmt.Sprintf("{mqtt: {broker: %s, topic: results, client_id: validate-away}}", closed)),
		want: []string{
			"ok file source 'rec': recording readable",
			fmt.Sprintf(`fail mqtt sink 'db': mqtt: connecting to %s as "validate-away-probe-XXXXXXXX": network Error : dial tcp %s: connect: connection refused`, closed, strings.TrimPrefix(closed, "tcp://")),
		},
		inStderr: "1 of 2 components failed",
	}, {
		name:     "address in use",
		pipeline: fmt.Sprintf("sources:\n  - name: influx\n    http: {addr: %q, state_dir: state}\nbolts:\n  - name: out\n    input: {from: influx, grouping: global}\n    sink: {file: \"-\"}\n", busy.Addr()),
		want: []string{
			fmt.Sprintf("fail http source 'influx': listen on %[1]s: listen tcp %[1]s: bind: address already in use", busy.Addr()),
			"ok file sink 'out': standard output",
		},
		inStderr: "1 of 2 components failed",
	}}
	probeID := func(s string) string {
		if i := strings.Index(s, "-probe-"); i >= 0 && len(s) >= i+15 {
			return s[:i+7] + "XXXXXXXX" + s[i+15:]
		}
		return s
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(dir, "out"), 0o755))
			file := filepath.Join(dir, "p.yaml")
			require.NoError(t, os.WriteFile(file, []byte(tt.pipeline), 0o644))
			code, stdout, stderr := runCmd(t, "", "validate", "--connect", file)
			stdout = strings.NewReplacer(dir, "DIR").Replace(probeID(stdout))
			stdout = regexpAddr.ReplaceAllString(stdout, "address ADDR free")
			assert.Equal(t, strings.Join(tt.want, "\n")+"\n", stdout)
			if tt.inStderr == "" {
				assert.Equal(t, exitOK, code, stderr)
			} else {
				assert.Equal(t, exitError, code)
				assert.Contains(t, strings.ReplaceAll(stderr, dir, "DIR"), tt.inStderr)
			}
			entries, err := os.ReadDir(filepath.Join(dir, "out"))
			require.NoError(t, err)
			assert.Empty(t, entries, "the file sink's directory stays as it was")
		})
	}
	var table *string
	require.NoError(t, conn.QueryRow(ctx, "SELECT to_regclass($1)::text", schema+".readings").Scan(&table))
	assert.Nil(t, table, "validate created the table")
}

// regexpAddr matches what validate says of a free address.
var regexpAddr = regexp.MustCompile(`address 127\.0\.0\.1:\d+ free`)
