package postgres

import (
	"testing"

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
