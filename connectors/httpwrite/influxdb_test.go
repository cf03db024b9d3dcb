package httpwrite_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectors/influxdb/influxtest"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/internal/lpcases"
	"github.com/sensorstorm/sensorstorm/particle"
)

// TestSameAsInfluxDB writes each case of the project's table of
// line-protocol cases, as a 1.x client sends it, to a real InfluxDB 1.x
// and to the endpoint: the answers' status codes agree, and the point the
// endpoint emits, the point InfluxDB stores and the table's point are
// the same (strings, tags, time), except where the case says how
// sensorstorm differs, which docs/influxdb.md's table lists; there InfluxDB's
// answer is checked to be the one the case says.
func TestSameAsInfluxDB(t *testing.T) {
	cases, err := lpcases.Cases()
	require.NoError(t, err)
	influx := influxtest.Start(t, influxtest.Config{})
	srv := startServer(t, httpwrite.Config{}, nil)
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			db := fmt.Sprintf("case%d", i)
			influx.CreateDatabase(db)
			iresp, ibody := post(t, http.MethodPost, influx.URL()+"/write?db="+db, nil, []byte(c.Line))
			emitted := len(srv.particles())
			before := time.Now().UnixNano()
			sresp, sbody := post(t, http.MethodPost, srv.url+"/write?db="+db, nil, []byte(c.Line))
			after := time.Now().UnixNano()
			want := http.StatusNoContent
			if c.Bad {
				want = http.StatusBadRequest
			}
			require.Equal(t, want, sresp.StatusCode, "sensorstorm: %s", sbody)
			if c.Differs != "" {
				assert.Equal(t, c.InfluxDBStatus, iresp.StatusCode, "InfluxDB, where sensorstorm differs (%s): %s", c.Differs, ibody)
				return
			}
			require.Equal(t, sresp.StatusCode, iresp.StatusCode, "InfluxDB: %s", ibody)
			if c.Bad {
				return
			}
			connectortest.WaitFor(t, 10*time.Second, "the point", func() bool { return len(srv.particles()) > emitted })
			got := srv.particles()[emitted]
			lpcases.Normalize(&got)
			ns := int64(1)
			if c.ReceiptTime {
				assert.True(t, got.Time >= before && got.Time <= after, "receipt time %d not in [%d, %d]", got.Time, before, after)
				ns = got.Time
			}
			point, err := c.Want(ns)
			require.NoError(t, err)
			assert.Equal(t, point, got, "sensorstorm")

			stored := influx.Points(db, point.Measurement)
			require.Len(t, stored, 1, "InfluxDB")
			if !c.ReceiptTime {
				assert.Equal(t, point.Time, stored[0].Time, "InfluxDB's time")
			}
			assert.Equal(t, point, fromInfluxDB(t, point, stored[0]), "InfluxDB")
		})
	}
}

// TestPartialWriteAndPrecisionAsInfluxDB writes the same bodies to a
// real InfluxDB 1.x and to the endpoint: a body with a bad line between
// good ones is a 400 partial write for both, which store (emit) the good
// lines; and in precision s, a line without a timestamp is stored at the
// receipt time in whole seconds by both.
func TestPartialWriteAndPrecisionAsInfluxDB(t *testing.T) {
	influx := influxtest.Start(t, influxtest.Config{})
	influx.CreateDatabase("d")
	srv := startServer(t, httpwrite.Config{}, nil)
	for _, tc := range []struct {
		name, target, body string
		status             int
		times              []int64 // of the points stored; none: one at the receipt time, in whole seconds
	}{
		{name: "partial write", target: "/write?db=d", body: "partial n=1i 1000\npartial n= 2000\npartial n=3i 3000\n",
			status: http.StatusBadRequest, times: []int64{1000, 3000}},
		{name: "precision s without a timestamp", target: "/write?db=d&precision=s", body: "seconds n=1i\n", status: http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			measurement := tc.body[:strings.IndexAny(tc.body, " ,")]
			emitted := len(srv.particles())
			before := time.Now().Truncate(time.Second).UnixNano()
			iresp, ibody := post(t, http.MethodPost, influx.URL()+tc.target, nil, []byte(tc.body))
			sresp, sbody := post(t, http.MethodPost, srv.url+tc.target, nil, []byte(tc.body))
			after := time.Now().UnixNano()
			assert.Equal(t, tc.status, iresp.StatusCode, "InfluxDB: %s", ibody)
			assert.Equal(t, tc.status, sresp.StatusCode, "sensorstorm: %s", sbody)
			var stored, got []int64
			for _, p := range influx.Points("d", measurement) {
				stored = append(stored, p.Time)
			}
			connectortest.WaitFor(t, 10*time.Second, "the points", func() bool { return len(srv.particles()) >= emitted+len(stored) })
			for _, p := range srv.particles()[emitted:] {
				got = append(got, p.Time)
			}
			if tc.times != nil {
				assert.Equal(t, tc.times, stored, "InfluxDB")
				assert.Equal(t, tc.times, got, "sensorstorm")
				return
			}
			for who, ts := range map[string][]int64{"InfluxDB": stored, "sensorstorm": got} {
				require.Len(t, ts, 1, who)
				assert.Zero(t, ts[0]%int64(time.Second), "%s: whole seconds", who)
				assert.True(t, ts[0] >= before && ts[0] <= after, "%s: %d not in [%d, %d]", who, ts[0], before, after)
			}
		})
	}
}

// fromInfluxDB returns the point InfluxDB stored as a particle, its
// fields read as the kinds of want's, at want's time.
func fromInfluxDB(t *testing.T, want particle.Particle, s influxtest.Point) particle.Particle {
	t.Helper()
	p := particle.Particle{Time: want.Time, Measurement: want.Measurement}
	for k, v := range s.Tags {
		if v != "" { // GROUP BY * gives the tags of other series empty
			p.Tags = append(p.Tags, particle.Tag{Key: k, Value: v})
		}
	}
	for _, f := range want.Fields {
		v, ok := s.Fields[f.Key]
		if !ok {
			continue
		}
		var val particle.Value
		switch x := v.(type) {
		case string:
			val = particle.String(x)
		case bool:
			val = particle.Bool(x)
		case json.Number:
			var err error
			switch f.Value.Kind() {
			case particle.KindInt:
				var i int64
				i, err = x.Int64()
				val = particle.Int(i)
			default:
				var fl float64
				fl, err = x.Float64()
				val = particle.Float(fl)
			}
			require.NoError(t, err)
		}
		p.Fields = append(p.Fields, particle.Field{Key: f.Key, Value: val})
	}
	lpcases.Normalize(&p)
	return p
}
