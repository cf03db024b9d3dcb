package influxdb_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/connectors/influxdb/influxtest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// checkInflux checks that the InfluxDB database db holds readings
// [0, n) once each, with their values, tags and times.
func checkInflux(t *testing.T, srv *influxtest.Server, db string, n int) {
	t.Helper()
	points := srv.Points(db, "reading")
	require.Len(t, points, n)
	seen := map[int64]bool{}
	for _, p := range points {
		i, err := p.Fields["n"].(json.Number).Int64()
		require.NoError(t, err)
		require.False(t, seen[i], "reading %d twice", i)
		seen[i] = true
		want := reading(int(i))
		assert.Equal(t, want.Time, p.Time, "reading %d", i)
		assert.Equal(t, map[string]string{"sensor": want.Tags[0].Value}, p.Tags, "reading %d", i)
		assert.Equal(t, json.Number(fmt.Sprint(want.Fields[1].Value.FloatValue())), p.Fields["v"], "reading %d", i)
	}
}

// checkVictoria checks that VictoriaMetrics holds readings [0, n) once
// each: the samples of reading_n, duplicates included, with their times
// and labels.
func checkVictoria(t *testing.T, srv *influxtest.Server, labels map[string]string, n int) {
	t.Helper()
	var samples []influxtest.Sample
	// It makes what it took searchable within a second or so.
	waitUntil(t, "VictoriaMetrics shows the readings", func() bool {
		samples = srv.Export(`{__name__="reading_n"}`)
		return len(samples) >= n
	})
	require.Len(t, samples, n)
	seen := map[int]bool{}
	for _, s := range samples {
		i := int(s.Value)
		require.False(t, seen[i], "reading %d twice", i)
		seen[i] = true
		want := reading(i)
		assert.Equal(t, want.Time/1e6, s.Time, "reading %d", i)
		wantLabels := map[string]string{"__name__": "reading_n", "sensor": want.Tags[0].Value}
		for k, v := range labels {
			wantLabels[k] = v
		}
		assert.Equal(t, wantLabels, s.Labels, "reading %d", i)
	}
}

// checkAllAcked checks that a run acknowledged every one of n readings
// once, and failed and dead-lettered none.
func checkAllAcked(t *testing.T, r result, n int) {
	t.Helper()
	require.NoError(t, r.err)
	assert.Empty(t, r.failed)
	assert.Empty(t, r.dead)
	assert.Len(t, r.acked, n)
	for id, k := range r.acked {
		assert.Equal(t, 1, k, "reading %d acknowledged %d times", id, k)
	}
}

// TestSinkWrites writes readings through each API, with and without gzip,
// credentials and a coarser precision, to a real InfluxDB 1.x and a real
// VictoriaMetrics, and reads them back.
func TestSinkWrites(t *testing.T) {
	const n = 2500
	tests := []struct {
		name   string
		server influxtest.Config
		path   string // the write URL after the server's
		cfg    influxdb.Config
		labels map[string]string // VictoriaMetrics' labels beyond the tags
	}{
		{name: "influxdb 1.x", path: "/write?db=test", cfg: influxdb.Config{BatchSize: 1000}},
		{name: "influxdb 1.x gzip ms credentials", server: influxtest.Config{Username: "admin", Password: "s3cret'"},
			path: "/write?db=test", cfg: influxdb.Config{Gzip: true, Precision: particle.Millisecond, Username: "admin", Password: "s3cret'"}},
		{name: "influxdb 1.x precision in url", path: "/write?db=test&precision=ms", cfg: influxdb.Config{BatchSize: 333}},
		{name: "victoriametrics 1.x", server: influxtest.Config{Kind: influxtest.VictoriaMetrics}, path: "/write?db=test",
			labels: map[string]string{"db": "test"}},
		{name: "victoriametrics 2.x gzip us", server: influxtest.Config{Kind: influxtest.VictoriaMetrics},
			path: "/api/v2/write?org=acme&bucket=test", cfg: influxdb.Config{Gzip: true, Precision: particle.Microsecond, BatchSize: 700}},
		{name: "victoriametrics credentials in url", server: influxtest.Config{Kind: influxtest.VictoriaMetrics, Username: "u", Password: "p"},
			path: "/write?db=test", labels: map[string]string{"db": "test"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := influxtest.Start(t, tt.server)
			cfg := tt.cfg
			cfg.URL = srv.URL() + tt.path
			if tt.server.Kind == influxtest.VictoriaMetrics && tt.server.Username != "" {
				cfg.URL = "http://" + tt.server.Username + ":" + tt.server.Password + "@" + srv.Addr() + tt.path
			}
			if tt.server.Kind == influxtest.InfluxDB {
				srv.CreateDatabase("test")
			}
			sink := newSink(t, cfg)
			r := run(t, sink, readings(n), nil)
			checkAllAcked(t, r, n)
			assert.Equal(t, uint64(n), sink.Stats().Written.Load())
			if tt.server.Kind == influxtest.InfluxDB {
				checkInflux(t, srv, "test", n)
			} else {
				checkVictoria(t, srv, tt.labels, n)
			}
		})
	}
}

// TestSinkOutage stops the server mid-run and starts it again once the
// sink met the outage: every reading is stored once, none failed or
// dead-lettered, each acknowledged once.
func TestSinkOutage(t *testing.T) {
	const n = 3000
	for _, kind := range []influxtest.Kind{influxtest.InfluxDB, influxtest.VictoriaMetrics} {
		t.Run(fmt.Sprint(map[influxtest.Kind]string{influxtest.InfluxDB: "influxdb", influxtest.VictoriaMetrics: "victoriametrics"}[kind]), func(t *testing.T) {
			srv := influxtest.Start(t, influxtest.Config{Kind: kind})
			if kind == influxtest.InfluxDB {
				srv.CreateDatabase("test")
			}
			sink := newSink(t, influxdb.Config{URL: srv.URL() + "/write?db=test", BatchSize: 200, FlushInterval: 1})
			r := run(t, sink, readings(n), func(i int) {
				if i != n/2 {
					return
				}
				srv.Stop()
				waitUntil(t, "the sink met the outage", func() bool { return sink.Stats().Outages.Load() > 0 })
				srv.Start()
			})
			checkAllAcked(t, r, n)
			assert.NotZero(t, r.topo.Stats("write").DestinationRetries.Load())
			if kind == influxtest.InfluxDB {
				checkInflux(t, srv, "test", n)
			} else {
				checkVictoria(t, srv, map[string]string{"db": "test"}, n)
			}
		})
	}
}

// TestSinkPartialWrite writes readings among which InfluxDB 1.x refuses
// some: a field type conflict (two lines, of which the answer names one)
// and an unsigned integer (which 1.x cannot parse). Exactly those are
// dead-lettered with the server's message; the others are stored and
// acknowledged.
func TestSinkPartialWrite(t *testing.T) {
	const n = 1000
	srv := influxtest.Start(t, influxtest.Config{})
	srv.CreateDatabase("test")
	ps := readings(n)
	refused := map[uint64]string{
		100: "field type conflict",
		101: "unable to parse",
		700: "field type conflict",
	}
	ps[100].Fields[1].Value = particle.String("high")
	ps[101].Fields[1].Value = particle.Uint(7)
	ps[700].Fields[1].Value = particle.Bool(true)
	sink := newSink(t, influxdb.Config{URL: srv.URL() + "/write?db=test", BatchSize: n})
	r := run(t, sink, ps, nil)
	require.NoError(t, r.err)
	assert.Empty(t, r.failed)
	assert.Len(t, r.acked, n, "refused lines are acknowledged once dead-lettered")
	require.Len(t, r.dead, len(refused))
	for _, d := range r.dead {
		id, _ := d.Particle.Field("n")
		msg, ok := refused[uint64(id.IntValue())]
		require.True(t, ok, "reading %d dead-lettered: %v", id.IntValue(), d.Err)
		assert.ErrorIs(t, d.Err, operation.ErrRejected)
		se, ok := errors.AsType[*influxdb.ServerError](d.Err)
		require.True(t, ok, "%v", d.Err)
		assert.Equal(t, http.StatusBadRequest, se.StatusCode)
		assert.Contains(t, se.Message, "partial write")
		assert.Contains(t, d.Err.Error(), msg)
	}
	points := srv.Points("test", "reading")
	assert.Len(t, points, n-len(refused))
	assert.Equal(t, uint64(len(refused)), sink.Stats().Rejected.Load())
	assert.Equal(t, uint64(n-len(refused)), sink.Stats().Written.Load())
}

// TestSinkRefused writes where the server refuses for good: the run stops
// at the first write with the server's message, nothing acknowledged,
// failed or dead-lettered.
func TestSinkRefused(t *testing.T) {
	tests := []struct {
		name    string
		server  influxtest.Config
		cfg     influxdb.Config
		path    string
		status  int
		message string
	}{
		{name: "no such database", path: "/write?db=nope", status: http.StatusNotFound, message: `database not found: "nope"`},
		{name: "wrong password", server: influxtest.Config{Username: "admin", Password: "right"},
			cfg: influxdb.Config{Username: "admin", Password: "wrong"}, path: "/write?db=test",
			status: http.StatusUnauthorized, message: "authorization failed"},
		{name: "no credentials", server: influxtest.Config{Username: "admin", Password: "right"}, path: "/write?db=test",
			status: http.StatusUnauthorized, message: "unable to parse authentication credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := influxtest.Start(t, tt.server)
			srv.CreateDatabase("test")
			cfg := tt.cfg
			cfg.URL = srv.URL() + tt.path
			cfg.BatchSize = 10
			sink := newSink(t, cfg)
			r := run(t, sink, readings(100), nil)
			require.ErrorIs(t, r.err, operation.ErrRefused)
			require.ErrorIs(t, r.err, topology.ErrGaveUp)
			se, ok := errors.AsType[*influxdb.ServerError](r.err)
			require.True(t, ok, "%v", r.err)
			assert.Equal(t, tt.status, se.StatusCode)
			assert.Equal(t, tt.message, se.Message)
			assert.Empty(t, r.acked)
			assert.Empty(t, r.failed)
			assert.Empty(t, r.dead)
			assert.Equal(t, uint64(1), sink.Stats().Requests.Load(), "no retry")
			assert.Zero(t, r.topo.Stats("write").DestinationRetries.Load())
		})
	}
}
