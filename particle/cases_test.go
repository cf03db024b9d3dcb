package particle_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/internal/lpcases"
	"github.com/sensorstorm/sensorstorm/particle"
)

// TestCases decodes the project's table of line-protocol cases: each
// good line gives the point the table says (InfluxDB's, unless the case
// says how it differs), each bad line only errors; and every point
// decoded is encoded into a line that decodes into it again.
func TestCases(t *testing.T) {
	cases, err := lpcases.Cases()
	require.NoError(t, err)
	const receipt = 42
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			cfg := particle.DecoderConfig{DefaultTime: func() int64 { return receipt }}
			got := decodeVariants(t, []byte(c.Line), cfg)
			if c.Bad {
				for _, x := range got {
					_, isErr := x.(*particle.DecodeError)
					assert.True(t, isErr, "%q: want only errors, got %v", c.Line, x)
				}
				require.NotEmpty(t, got)
				return
			}
			require.Len(t, got, 1, "%q", c.Line)
			p, ok := got[0].(particle.Particle)
			require.True(t, ok, "%q: %v", c.Line, got[0])
			ns := int64(1)
			if c.ReceiptTime {
				ns = receipt
			}
			want, err := c.Want(ns)
			require.NoError(t, err)
			lpcases.Normalize(&p)
			assert.Equal(t, want, p)

			line, err := particle.AppendLineProtocol(nil, &p, particle.Nanosecond)
			require.NoError(t, err)
			again := decodeVariants(t, line, cfg)
			require.Len(t, again, 1, "%q", line)
			q, ok := again[0].(particle.Particle)
			require.True(t, ok, "re-decoding %q: %v", line, again[0])
			lpcases.Normalize(&q)
			assert.Equal(t, p, q, "re-decoding %q", line)
		})
	}
}
