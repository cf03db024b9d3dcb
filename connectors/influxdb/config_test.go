package influxdb_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/particle"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  influxdb.Config
		want string // in the error; empty for a valid config
	}{
		{"1.x", influxdb.Config{URL: "http://localhost:8086/write?db=x"}, ""},
		{"1.x behind a prefix", influxdb.Config{URL: "https://h/influx/write?db=x&rp=week"}, ""},
		{"2.x", influxdb.Config{URL: "http://localhost:8086/api/v2/write?org=o&bucket=b"}, ""},
		{"2.x org id", influxdb.Config{URL: "http://localhost:8086/api/v2/write?orgID=1&bucket=b"}, ""},
		{"same precision twice", influxdb.Config{URL: "http://h/write?db=x&precision=s", Precision: particle.Second}, ""},
		{"empty", influxdb.Config{}, "url is empty"},
		{"no db", influxdb.Config{URL: "http://h:8086/write"}, "needs db"},
		{"no bucket", influxdb.Config{URL: "http://h:8086/api/v2/write?org=o"}, "needs org and bucket"},
		{"other path", influxdb.Config{URL: "http://h:8086/query?db=x"}, "path must end with /write"},
		{"scheme", influxdb.Config{URL: "udp://h:8089/write?db=x"}, "scheme must be http or https"},
		{"no host", influxdb.Config{URL: "http:///write?db=x"}, "no host"},
		{"bad precision", influxdb.Config{URL: "http://h/write?db=x&precision=h"}, "precision"},
		{"two precisions", influxdb.Config{URL: "http://h/write?db=x&precision=s", Precision: particle.Millisecond}, "precision s, but precision ms is set"},
		{"token and user", influxdb.Config{URL: "http://u:p@h/write?db=x", Token: "t"}, "a token or a username"},
		{"negative batch", influxdb.Config{URL: "http://h/write?db=x", BatchSize: -1}, "batch_size"},
		{"negative interval", influxdb.Config{URL: "http://h/write?db=x", FlushInterval: -1}, "flush_interval"},
		{"negative timeout", influxdb.Config{URL: "http://h/write?db=x", Timeout: -1}, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := influxdb.NewSink(tt.cfg)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, influxdb.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}
