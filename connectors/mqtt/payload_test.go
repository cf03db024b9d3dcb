package mqtt

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/particle"
)

type decoded struct {
	ps   []particle.Particle
	errs []*particle.DecodeError
	raws []string // the text each error carries
}

func decodeAll(t testing.TB, cfg PayloadConfig, topic, payload string) decoded {
	t.Helper()
	cfg.setDefaults()
	d, err := newDecoder(cfg)
	require.NoError(t, err)
	var out decoded
	msgs := []*message{{topic: topic, payload: []byte(payload), recv: 42}}
	err = d.decode(msgs, func(_ int, p particle.Particle) error {
		p.Origin, p.Seq = 0, 0
		out.ps = append(out.ps, p)
		return nil
	}, func(_ int, err error, raw []byte) {
		var de *particle.DecodeError
		require.True(t, errors.As(err, &de), "%v", err)
		out.errs = append(out.errs, de)
		out.raws = append(out.raws, string(raw))
	})
	require.NoError(t, err)
	return out
}

// TestRejectsCarryTheirEntry checks that a bad entry is rejected with its
// own text, not the whole message: a line of line protocol, an element of
// a JSON array; and that JSON is as strict as line protocol about keys
// given twice, and never turns an integer beyond int64 into a float.
func TestRejectsCarryTheirEntry(t *testing.T) {
	jsonCfg := PayloadConfig{Format: FormatJSON}
	for _, tc := range []struct {
		name    string
		cfg     PayloadConfig
		payload string
		errs    []string // each error's position, message and text
	}{
		{"bad lines of line protocol", PayloadConfig{}, "m v=1 1\nbad\nm v=2 2\nm v=x 3\n", []string{
			`2:4 "bad"`, `4:5 "m v=x 3"`,
		}},
		{"a bad element of a JSON array", jsonCfg, `[{"v":1}, 3, {"v":2}]`, []string{`2:0 "3"`}},
		{"a duplicate key", jsonCfg, "{\"v\":1,\n \"v\":2}", []string{
			`2:2 mqtt: duplicate JSON key "v" "{\"v\":1,\n \"v\":2}"`,
		}},
		{"a duplicate key in a nested object", jsonCfg, `[{"v":1},{"w":{"a":1,"a":2}}]`, []string{
			`1:22 mqtt: duplicate JSON key "a" "[{\"v\":1},{\"w\":{\"a\":1,\"a\":2}}]"`,
		}},
		{"an integer beyond int64", jsonCfg, `{"v":9223372036854775808}`, []string{
			`1:6 line-protocol value out of range: integer 9223372036854775808 beyond int64 "{\"v\":9223372036854775808}"`,
		}},
		{"a negative integer beyond int64", jsonCfg, `{"v":-9223372036854775809}`, []string{
			`1:6 line-protocol value out of range: integer -9223372036854775809 beyond int64 "{\"v\":-9223372036854775809}"`,
		}},
		{"data after the value", jsonCfg, `{"v":1} {"v":2}`, []string{`1:9 data after the JSON value "{\"v\":1} {\"v\":2}"`}},
		{"int64 bounds and floats are fine", jsonCfg, `{"a":9223372036854775807,"b":-9223372036854775808,"c":1e300}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeAll(t, tc.cfg, "s/x", tc.payload)
			var errs []string
			for i, e := range got.errs {
				msg := fmt.Sprintf("%d:%d %q", e.Line, e.Column, got.raws[i])
				if strings.HasPrefix(tc.payload, "{") || strings.Contains(tc.name, "nested") {
					msg = fmt.Sprintf("%d:%d %v %q", e.Line, e.Column, e.Err, got.raws[i])
				}
				errs = append(errs, msg)
			}
			assert.Equal(t, tc.errs, errs)
		})
	}
}

func TestDecodePayloads(t *testing.T) {
	f := func(k string, v particle.Value) particle.Field { return particle.Field{Key: k, Value: v} }
	tag := func(k, v string) particle.Tag { return particle.Tag{Key: k, Value: v} }
	for _, tc := range []struct {
		name    string
		cfg     PayloadConfig
		topic   string
		payload string
		want    []particle.Particle
		errAt   [][2]int // line, column of each error
	}{{
		name:    "line protocol with topic tags",
		cfg:     PayloadConfig{TopicTags: "sensors/{room}/{sensor}"},
		topic:   "sensors/kitchen/t1",
		payload: "temp,unit=c v=21.5 1000\ntemp v=22 2000",
		want: []particle.Particle{
			{Time: 1000, Measurement: "temp", Tags: []particle.Tag{tag("room", "kitchen"), tag("sensor", "t1"), tag("unit", "c")}, Fields: []particle.Field{f("v", particle.Float(21.5))}},
			{Time: 2000, Measurement: "temp", Tags: []particle.Tag{tag("room", "kitchen"), tag("sensor", "t1")}, Fields: []particle.Field{f("v", particle.Float(22))}},
		},
	}, {
		name:    "payload tag wins over topic tag; short topic gets none",
		cfg:     PayloadConfig{TopicTags: "a/{x}/{y}"},
		topic:   "a/1",
		payload: "m,x=p v=1i 5",
		want:    []particle.Particle{{Time: 5, Measurement: "m", Tags: []particle.Tag{tag("x", "p")}, Fields: []particle.Field{f("v", particle.Int(1))}}},
	}, {
		name:    "a topic tag line protocol cannot hold is rejected on each line",
		cfg:     PayloadConfig{TopicTags: "sensors/{room}"},
		topic:   `sensors/a\`,
		payload: "m v=1 1\nm v=2 2",
		errAt:   [][2]int{{1, 0}, {2, 0}},
	}, {
		name:    "a json tag line protocol cannot hold is rejected",
		cfg:     PayloadConfig{Format: FormatJSON, JSON: JSONConfig{TagFields: []string{"room"}}},
		topic:   "x",
		payload: `[{"room":"a\\","v":1},{"room":"b","v":2}]`,
		want:    []particle.Particle{{Time: 42, Measurement: "x", Tags: []particle.Tag{tag("room", "b")}, Fields: []particle.Field{f("v", particle.Float(2))}}},
		errAt:   [][2]int{{1, 0}},
	}, {
		name:    "missing timestamp takes the receive time",
		topic:   "t",
		payload: "m v=1",
		want:    []particle.Particle{{Time: 42, Measurement: "m", Fields: []particle.Field{f("v", particle.Float(1))}}},
	}, {
		name:    "missing timestamp required",
		cfg:     PayloadConfig{RequireTime: true},
		topic:   "t",
		payload: "m v=1",
		errAt:   [][2]int{{1, 0}},
	}, {
		name:    "bad line among good ones",
		topic:   "t",
		payload: "m v=1 1\nm v=oops 2\nm v=3 3",
		want: []particle.Particle{
			{Time: 1, Measurement: "m", Fields: []particle.Field{f("v", particle.Float(1))}},
			{Time: 3, Measurement: "m", Fields: []particle.Field{f("v", particle.Float(3))}},
		},
		errAt: [][2]int{{2, 5}},
	}, {
		name:    "json object",
		cfg:     PayloadConfig{Format: FormatJSON, JSON: JSONConfig{TagFields: []string{"sensor"}}},
		topic:   "sensors/temp",
		payload: `{"time":"2024-01-01T00:00:00Z","sensor":"t1","v":21.5,"ok":true,"note":"x","nested":{"a":1},"skip":null}`,
		want: []particle.Particle{{Time: 1704067200000000000, Measurement: "temp", Tags: []particle.Tag{tag("sensor", "t1")},
			Fields: []particle.Field{f("nested_a", particle.Float(1)), f("note", particle.String("x")), f("ok", particle.Bool(true)), f("v", particle.Float(21.5))}}},
	}, {
		name:    "json array with epoch ms, measurement field, a bad element",
		cfg:     PayloadConfig{Format: FormatJSON, JSON: JSONConfig{TimeField: "ts", TimeFormat: "unix_ms", MeasurementField: "m", StringsAsTags: true}},
		topic:   "x",
		payload: `[{"ts":1500,"m":"cpu","host":"h","v":1},{"ts":"bad","v":2},3,{"ts":2}]`,
		want:    []particle.Particle{{Time: 1500 * 1e6, Measurement: "cpu", Tags: []particle.Tag{tag("host", "h")}, Fields: []particle.Field{f("v", particle.Float(1))}}},
		errAt:   [][2]int{{2, 0}, {3, 0}, {4, 0}},
	}, {
		name:    "json syntax error",
		cfg:     PayloadConfig{Format: FormatJSON},
		topic:   "x",
		payload: "{\"v\":1,\n \"w\":}",
		errAt:   [][2]int{{2, 6}},
	}, {
		name:    "json fractional unix seconds",
		cfg:     PayloadConfig{Format: FormatJSON, JSON: JSONConfig{TimeFormat: "unix"}},
		topic:   "x",
		payload: `{"time":1.5,"v":1}`,
		want:    []particle.Particle{{Time: 1.5e9, Measurement: "x", Fields: []particle.Field{f("v", particle.Float(1))}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeAll(t, tc.cfg, tc.topic, tc.payload)
			assert.Equal(t, tc.want, got.ps)
			require.Len(t, got.errs, len(tc.errAt), "%v", got.errs)
			for i, e := range got.errs {
				assert.Equal(t, tc.topic, e.Source)
				assert.Equal(t, tc.errAt[i], [2]int{e.Line, e.Column}, "%v", e)
			}
		})
	}
}

func FuzzDecodePayload(f *testing.F) {
	f.Add(false, "m,t=1 v=1 1\nbad")
	f.Add(true, `[{"time":"2024-01-01T00:00:00Z","v":1},{"v":{"a":[1,true,"x"]}}]`)
	f.Fuzz(func(t *testing.T, json bool, payload string) {
		cfg := PayloadConfig{TopicTags: "s/{a}/#"}
		if json {
			cfg.Format = FormatJSON
		}
		got := decodeAll(t, cfg, "s/x/y", payload)
		for _, p := range got.ps {
			if len(p.Fields) == 0 {
				t.Fatalf("particle without fields: %+v", p)
			}
		}
	})
}

// TestDecodeJoined decodes several payloads in one go: particles, errors
// and receive times stay with their message.
func TestDecodeJoined(t *testing.T) {
	cfg := PayloadConfig{TopicTags: "s/{sensor}"}
	cfg.setDefaults()
	d, err := newDecoder(cfg)
	require.NoError(t, err)
	msgs := []*message{
		{topic: "s/a", payload: []byte("m v=1 1\nm v=bad 2\n"), recv: 100},
		{topic: "s/b", payload: []byte("m v=3"), recv: 200},
		{topic: "s/c", payload: []byte(`m s="quoted" 4`), recv: 300},
		{topic: "s/d", payload: []byte("oops\nm v=5"), recv: 400},
	}
	type got struct {
		i    int
		time int64
		s    string
	}
	var ps []got
	var errs []string
	require.NoError(t, d.decode(msgs, func(i int, p particle.Particle) error {
		sensor, _ := p.Tag("sensor")
		ps = append(ps, got{i, p.Time, sensor})
		return nil
	}, func(i int, err error, _ []byte) {
		errs = append(errs, fmt.Sprint(i, ": ", err))
	}))
	assert.Equal(t, []got{{0, 1, "a"}, {1, 200, "b"}, {2, 4, "c"}, {3, 400, "d"}}, ps)
	require.Len(t, errs, 2)
	assert.Contains(t, errs[0], "0: particle: decode s/a:2:")
	assert.Contains(t, errs[1], "3: particle: decode s/d:1:")
}
