package mqtt

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/particle"
)

// TestJSONTimeOutOfRange checks that JSON times outside int64
// nanoseconds are invalid rather than wrapped around: year 3000 became a
// negative timestamp.
func TestJSONTimeOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		format, time string
		ok           bool
	}{
		{"rfc3339", `"3000-01-01T00:00:00Z"`, false},
		{"rfc3339", `"1600-01-01T00:00:00Z"`, false},
		{"rfc3339", `"2262-04-11T23:47:16.854775807Z"`, true},
		{"rfc3339", `"2262-04-11T23:47:16.854775808Z"`, false},
		{"2006-01-02", `"2999-12-31"`, false},
		{"unix", `32503680000`, false},
		{"unix_ms", `1e300`, false},
		{"unix", `1700000000`, true},
	} {
		cfg := PayloadConfig{Format: FormatJSON, JSON: JSONConfig{TimeFormat: tc.format}}
		got := decodeAll(t, cfg, "x", `{"time":`+tc.time+`,"v":1}`)
		if tc.ok {
			assert.Len(t, got.ps, 1, "%s %s", tc.format, tc.time)
			continue
		}
		require.Len(t, got.errs, 1, "%s %s", tc.format, tc.time)
		assert.ErrorIs(t, got.errs[0], particle.ErrValueOutOfRange, "%s %s", tc.format, tc.time)
	}
}

// FuzzDecodePayloadTopic decodes any payload from any topic, line protocol and JSON, with a
// topic template: nothing panics, every error is a *particle.DecodeError
// naming the topic (at a line of a line-protocol payload) and carrying
// text of the payload (one line of a line-protocol payload, which
// JSON's duplicate keys and integers beyond int64 never reach), and every
// particle can be encoded and has fields.
func FuzzDecodePayloadTopic(f *testing.F) {
	for _, s := range []struct {
		json           bool
		topic, payload string
	}{
		{false, "sensors/kitchen/t1", "temp,unit=c v=21.5 1000\ntemp v=22 2000"},
		{false, "sensors/a", "m,room=x v=1i 5\nm v=\"open\nm v=3 3\n"},
		{false, "sensors/a/b/c/d", "m v=1,v=2 1\nm,a=1,a=2 v=1 1\n# c\n\n"},
		{true, "sensors/hall/h1", `{"time":"2024-01-01T00:00:00Z","v":21.5,"ok":true,"nested":{"a":[1,2]}}`},
		{true, "sensors//", `[{"time":"3000-01-01T00:00:00Z","v":1},{"time":"x"},3,null]`},
		{true, "s/r/x", "{\"v\":1,\n \"w\":}"},
		{true, "s/r/x", `[{"v":1,"v":2},{"w":{"a":1,"a":[2]}},{"v":1}]`},
		{true, "s/r/x", `{"v":18446744073709551615,"w":-9223372036854775809,"x":1e400}`},
		{false, "s/r/x", "\xef\xbb\xbfm v=1 1\nm v=1,v=2 2\n"},
	} {
		f.Add(s.json, s.topic, []byte(s.payload))
	}
	f.Fuzz(func(t *testing.T, json bool, topic string, payload []byte) {
		cfg := PayloadConfig{TopicTags: "sensors/{room}/{sensor}"}
		if json {
			cfg.Format = FormatJSON
		}
		cfg.setDefaults()
		d, err := newDecoder(cfg)
		require.NoError(t, err)
		lines := 1
		for _, c := range payload {
			if c == '\n' {
				lines++
			}
		}
		msgs := []*message{{topic: topic, payload: payload, recv: 42}}
		err = d.decode(msgs, func(_ int, p particle.Particle) error {
			require.NotEmpty(t, p.Fields)
			_, err := particle.AppendLineProtocol(nil, &p, particle.Nanosecond)
			require.NoError(t, err, "%#v", p)
			return nil
		}, func(_ int, err error, raw []byte) {
			var de *particle.DecodeError
			require.True(t, errors.As(err, &de), "%v", err)
			require.Equal(t, topic, de.Source)
			require.GreaterOrEqual(t, de.Line, 1)
			require.True(t, bytes.Contains(payload, raw), "%q is not text of %q", raw, payload)
			if !json {
				// JSON errors count array elements, not lines.
				require.LessOrEqual(t, de.Line, lines, "%v", err)
				require.NotContains(t, string(raw), "\n")
			}
		})
		require.NoError(t, err)
	})
}
