package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sensorstorm/sensorstorm/connectors/influxdb/influxtest"
)

// TestReplayInfluxOut replays a recording into a real InfluxDB 1.x: every
// reading stored, nothing on stdout; a database that does not exist stops
// the run with the server's message.
func TestReplayInfluxOut(t *testing.T) {
	srv := influxtest.Start(t, influxtest.Config{})
	srv.CreateDatabase("wsn")
	lp := filepath.Join("..", "..", "testdata", "library1-r1.lp")
	tests := []struct {
		name   string
		db     string
		code   int
		points int
		want   string // in stderr
	}{
		{"written", "wsn", exitOK, 7563, "summary: read=7563 emitted=7563"},
		{"no such database", "nope", exitError, 0, `database not found: "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"replay", "--speed", "max", "--quiet", "--influx-out", srv.URL() + "/write?db=" + tt.db, lp}, &stdout, &stderr)
			assert.Equal(t, tt.code, code, stderr.String())
			assert.Empty(t, stdout.String())
			assert.Contains(t, stderr.String(), tt.want)
			if tt.points > 0 {
				assert.Len(t, srv.Points(tt.db, "wsn"), tt.points)
			}
		})
	}
}

func TestInfluxOutUsage(t *testing.T) {
	lp := filepath.Join("..", "..", "testdata", "library1-r1.lp")
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"replay", "--influx-out", "http://localhost:8086/write", lp}, "--influx-out: influxdb: invalid config: url http://localhost:8086/write: a 1.x write URL needs db"},
		{[]string{"replay", "--influx-out", "http://localhost:8086/write?db=x", "--out", "o.lp", lp}, "--influx-out writes instead of --out"},
		{[]string{"ingest", "--http-write", "localhost:0", "--influx-out", "localhost:8086"}, "--influx-out: influxdb: invalid config"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		assert.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		assert.Contains(t, stderr.String(), tc.want, "%q", tc.args)
	}
}
