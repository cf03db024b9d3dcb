package httpwrite_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	influxhttp "github.com/influxdata/influxdb-client-go/v2/api/http"
	"github.com/influxdata/influxdb-client-go/v2/api/write"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectortest"
)

// TestInfluxDBClient writes with InfluxDB's official Go client, gzip on,
// through its blocking and its batching write APIs, and checks that every
// point arrives once with its time, tags and fields, that the client's
// health checks pass, and that it reads a partial write's and a refused
// write's answers as InfluxDB's.
func TestInfluxDBClient(t *testing.T) {
	const n = 500
	srv := startServer(t, httpwrite.Config{Token: "secret"}, nil)
	opts := influxdb2.DefaultOptions().SetUseGZip(true).SetBatchSize(64).SetFlushInterval(20).SetPrecision(time.Millisecond)
	client := influxdb2.NewClientWithOptions(srv.url, "secret", opts)
	defer client.Close()
	ctx := t.Context()

	ok, err := client.Ping(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	health, err := client.Health(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, "pass", health.Status)

	base := time.Now().Truncate(time.Millisecond)
	point := func(api string, i int) *write.Point {
		return influxdb2.NewPoint("env", map[string]string{"api": api, "room": "r1"},
			map[string]any{"n": i, "temp": 20.5, "ok": true, "note": "a \"quoted\" note"}, base.Add(time.Duration(i)*time.Millisecond))
	}
	blocking := client.WriteAPIBlocking("org", "bucket")
	for i := 0; i < n; i += 10 {
		var batch []*write.Point
		for j := i; j < i+10; j++ {
			batch = append(batch, point("blocking", j))
		}
		require.NoError(t, blocking.WritePoint(ctx, batch...))
	}
	batching := client.WriteAPI("org", "bucket")
	errs := batching.Errors()
	for i := range n {
		batching.WritePoint(point("batching", i))
	}
	batching.Flush()
	select {
	case err := <-errs:
		t.Fatalf("batching write: %v", err)
	default:
	}
	connectortest.WaitFor(t, 20*time.Second, "every point", func() bool { return len(srv.particles()) >= 2*n })

	seen := map[string]map[int64]int{"blocking": {}, "batching": {}}
	for _, p := range srv.particles() {
		api, _ := p.Tag("api")
		v, ok := p.Field("n")
		require.True(t, ok)
		nv := v.IntValue()
		seen[api][nv]++
		assert.Equal(t, base.Add(time.Duration(nv)*time.Millisecond).UnixNano(), p.Time)
		note, _ := p.Field("note")
		assert.Equal(t, `a "quoted" note`, note.StringValue())
	}
	for api, got := range seen {
		for i := range int64(n) {
			assert.Equal(t, 1, got[i], "%s point %d", api, i)
		}
	}

	err = blocking.WriteRecord(ctx, "env,api=partial n=1i", "env,api=partial n=", "env,api=partial n=2i")
	var herr *influxhttp.Error
	require.True(t, errors.As(err, &herr), "%v", err)
	assert.Equal(t, http.StatusBadRequest, herr.StatusCode)
	assert.Equal(t, "invalid", herr.Code)
	assert.Contains(t, herr.Message, "line 2:")

	wrong := influxdb2.NewClient(srv.url, "wrong")
	defer wrong.Close()
	err = wrong.WriteAPIBlocking("org", "bucket").WriteRecord(ctx, "env n=1i")
	require.True(t, errors.As(err, &herr), "%v", err)
	assert.Equal(t, http.StatusUnauthorized, herr.StatusCode)
	connectortest.WaitFor(t, 20*time.Second, "the partial write's valid lines", func() bool { return len(srv.particles()) >= 2*n+2 })
}

// TestInfluxDBClientPrecisions writes a point with the official Go
// client's blocking API in each precision: it arrives at its time
// truncated to the precision, as the client sends it.
func TestInfluxDBClientPrecisions(t *testing.T) {
	srv := startServer(t, httpwrite.Config{}, nil)
	at := time.Now().Truncate(time.Second).Add(123456789)
	for i, prec := range []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second} {
		client := influxdb2.NewClientWithOptions(srv.url, "", influxdb2.DefaultOptions().SetPrecision(prec))
		p := influxdb2.NewPoint("env", map[string]string{"prec": prec.String()}, map[string]any{"n": i}, at)
		require.NoError(t, client.WriteAPIBlocking("org", "bucket").WritePoint(t.Context(), p), prec)
		client.Close()
		connectortest.WaitFor(t, 10*time.Second, "the point", func() bool { return len(srv.particles()) > i })
		got := srv.particles()[i]
		tag, _ := got.Tag("prec")
		assert.Equal(t, prec.String(), tag)
		assert.Equal(t, at.Truncate(prec).UnixNano(), got.Time, prec)
	}
}
