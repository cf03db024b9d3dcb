package operation_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// AppendKey appends the key ByTags gives, tags before fields, without
// allocating.
func TestAppendKeyIsByTags(t *testing.T) {
	p := &particle.Particle{
		Tags:   []particle.Tag{{Key: "node", Value: "7"}, {Key: "seq", Value: "tag"}},
		Fields: []particle.Field{{Key: "seq", Value: particle.Int(3)}, {Key: "room", Value: particle.String("hall")}, {Key: "v", Value: particle.Float(1.5)}},
	}
	for _, names := range [][]string{{"node"}, {"v"}, {"node", "seq"}, {"room", "v", "missing"}, {"missing"}} {
		want := operation.ByTags(names...)(p)
		assert.Equal(t, want, string(operation.AppendKey(nil, p, names...)), "%q", names)
		assert.Equal(t, "x"+want, string(operation.AppendKey([]byte("x"), p, names...)), "%q appended", names)
	}
	assert.Equal(t, "7\x00tag", string(operation.AppendKey(nil, p, "node", "seq")))
	buf := make([]byte, 0, 64)
	assert.Zero(t, testing.AllocsPerRun(100, func() { buf = operation.AppendKey(buf[:0], p, "node", "v") }))
}
