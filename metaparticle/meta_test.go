package metaparticle_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/particle"
)

func TestBuiltins(t *testing.T) {
	cases := []struct {
		meta particle.Meta
		typ  string
	}{
		{metaparticle.Tick{Domain: metaparticle.StreamTime}, "tick"},
		{metaparticle.SpeedChange{Speed: 10}, "speed"},
	}
	for _, tc := range cases {
		p := metaparticle.New(42, tc.meta)
		assert.Equal(t, tc.typ, p.Meta.MetaType())
		assert.Equal(t, particle.KindMeta, p.Kind())
		assert.Equal(t, int64(42), p.Time)
	}
	assert.Equal(t, "speed 10x", metaparticle.SpeedChange{Speed: 10}.String())
	assert.Equal(t, "paused", metaparticle.SpeedChange{Paused: true}.String())
	assert.Equal(t, "stream", metaparticle.StreamTime.String())
	assert.Equal(t, "event", metaparticle.EventTime.String())
}

func TestIdentityIsOriginAndSequence(t *testing.T) {
	p := metaparticle.New(1, metaparticle.Tick{})
	p.Origin, p.Seq = 3, 9
	q := p
	q.Time = 2 // a copy forwarded later keeps its identity
	assert.Equal(t, metaparticle.IDOf(&p), metaparticle.IDOf(&q))
	assert.Equal(t, metaparticle.ID{Origin: 3, Seq: 9}, metaparticle.IDOf(&p))
}
