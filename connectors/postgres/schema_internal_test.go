package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"

	"github.com/sensorstorm/sensorstorm/particle"
)

// TestSeriesKey checks that series keys tell apart what escaping could
// confuse.
func TestSeriesKey(t *testing.T) {
	for _, tt := range []struct {
		p    particle.Particle
		want string
	}{
		{particle.Particle{Measurement: "cpu"}, `cpu`},
		{particle.Particle{Measurement: "cpu", Tags: []particle.Tag{{Key: "host", Value: "a"}, {Key: "z", Value: "b"}}}, `cpu,host=a,z=b`},
		{particle.Particle{Measurement: "c p,u", Tags: []particle.Tag{{Key: "h=o", Value: "a,b"}}}, `c\ p\,u,h\=o=a\,b`},
		{particle.Particle{Measurement: "cpu", Tags: []particle.Tag{{Key: "host", Value: `a\,b`}}}, `cpu,host=a\\\,b`},
		{particle.Particle{Measurement: "cpu", Tags: []particle.Tag{{Key: "host", Value: `a\`}, {Key: "b", Value: "c"}}}, `cpu,host=a\\,b=c`},
	} {
		assert.Equal(t, tt.want, seriesKey(&tt.p))
	}
}

func TestRefused(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "3F000"}, true},  // no such schema
		{&pgconn.PgError{Code: "3D000"}, true},  // no such database
		{&pgconn.PgError{Code: "28P01"}, true},  // wrong password
		{&pgconn.PgError{Code: "28000"}, true},  // no such role
		{&pgconn.PgError{Code: "42501"}, true},  // permission denied
		{&pgconn.PgError{Code: "42804"}, true},  // a column of another type
		{&pgconn.PgError{Code: "57P01"}, false}, // the server shutting down
		{&pgconn.PgError{Code: "23505"}, false}, // a duplicate key: data, not the sink
		{fmt.Errorf("connect: %w", errors.New("server refused TLS connection")), true},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, refused(tt.err), "%v", tt.err)
	}
}
