package particle_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/particle"
)

// referenceEncode encodes p with line protocol's own encoder, the way
// Encoder did before it wrote lines itself: values are checked first,
// then the names as lineprotocol.Encoder checks them.
func referenceEncode(p *particle.Particle, prec particle.Precision) ([]byte, error) {
	vals := make([]lineprotocol.Value, len(p.Fields))
	for i, f := range p.Fields {
		v, err := referenceValue(f.Value)
		if err != nil {
			return nil, fmt.Errorf("particle: encode: field %q: %w", f.Key, err)
		}
		vals[i] = v
	}
	tags := slices.Clone(p.Tags)
	slices.SortFunc(tags, func(a, b particle.Tag) int { return strings.Compare(a.Key, b.Key) })
	var e lineprotocol.Encoder
	e.SetPrecision(lineprotocol.Precision(prec))
	e.StartLine(p.Measurement)
	for _, t := range tags {
		e.AddTag(t.Key, t.Value)
	}
	for i, f := range p.Fields {
		e.AddField(f.Key, vals[i])
	}
	e.EndLine(time.Unix(0, p.Time))
	if err := e.Err(); err != nil {
		return nil, fmt.Errorf("particle: encode: %w", err)
	}
	return e.Bytes(), nil
}

func referenceValue(v particle.Value) (lineprotocol.Value, error) {
	switch v.Kind() {
	case particle.KindFloat:
		if lv, ok := lineprotocol.FloatValue(v.FloatValue()); ok {
			return lv, nil
		}
		return lineprotocol.Value{}, fmt.Errorf("non-finite float %v", v.FloatValue())
	case particle.KindInt:
		return lineprotocol.IntValue(v.IntValue()), nil
	case particle.KindUint:
		return lineprotocol.UintValue(v.UintValue()), nil
	case particle.KindBool:
		return lineprotocol.BoolValue(v.BoolValue()), nil
	case particle.KindString:
		s := v.StringValue()
		return lineprotocol.NewValueFromBytes(lineprotocol.String, unsafe.Slice(unsafe.StringData(s), len(s)))
	}
	return lineprotocol.Value{}, errors.New("invalid value")
}

// anyNameChars adds to nameChars what line protocol cannot hold in a name:
// control characters, DEL and a byte that is not UTF-8.
var anyNameChars = append(slices.Clone(nameChars), '\n', '\t', 0, 0x7f, 0x1f)

// anyNameGen mostly returns names line protocol can hold, so that most
// particles can be encoded, and sometimes one it cannot.
func anyNameGen() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		switch rapid.IntRange(0, 30).Draw(t, "kind") {
		case 0:
			return string(rapid.SliceOfN(rapid.SampledFrom(anyNameChars), 0, 8).Draw(t, "runes"))
		case 1:
			return nameGen().Draw(t, "name") + "\xff"
		case 2:
			return nameGen().Draw(t, "name") + "\\"
		}
		return nameGen().Draw(t, "name")
	})
}

func anyValueGen() *rapid.Generator[particle.Value] {
	return rapid.OneOf(
		valueGen(),
		rapid.Map(rapid.Float64(), particle.Float),
		rapid.Map(rapid.Int64Range(-1e9, 1e9), func(i int64) particle.Value { return particle.Float(float64(i) / 1000) }),
		rapid.Map(rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 1e-5, 1e21}), particle.Float),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) particle.Value { return particle.String(string(b)) }),
		rapid.Just(particle.Value{}),
	)
}

// lineProtocolAgrees returns p, or a copy of p changed where line
// protocol's encoder and InfluxDB, which Encoder follows, write it
// differently: tabs, carriage returns and newlines in string values
// (line protocol escapes them; Encoder rejects a newline) and control
// characters in tag values (line protocol rejects them) become spaces.
// TestEncode, TestEncodeErrors and TestRoundTrip check those.
func lineProtocolAgrees(p particle.Particle) *particle.Particle {
	space := func(s string, is func(byte) bool) string {
		b := []byte(s)
		for i, c := range b {
			if is(c) {
				b[i] = ' '
			}
		}
		return string(b)
	}
	p.Tags, p.Fields = slices.Clone(p.Tags), slices.Clone(p.Fields)
	for i, tg := range p.Tags {
		p.Tags[i].Value = space(tg.Value, func(c byte) bool { return (c > 0 && c < 0x20 && c != '\n' && c != '\r') || c == 0x7f })
	}
	for i, f := range p.Fields {
		if f.Value.Kind() == particle.KindString {
			p.Fields[i].Value = particle.String(space(f.Value.StringValue(), func(c byte) bool { return c == '\t' || c == '\r' || c == '\n' }))
		}
	}
	return &p
}

// TestEncoderMatchesLineProtocol checks that Encoder writes what line
// protocol's own encoder writes, and fails where it fails, with the same
// error, for any particle, valid or not, where InfluxDB agrees with line
// protocol (lineProtocolAgrees); CheckEncodable fails alike.
func TestEncoderMatchesLineProtocol(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prec := rapid.SampledFrom([]particle.Precision{particle.Nanosecond, particle.Microsecond, particle.Millisecond, particle.Second}).Draw(t, "precision")
		p := particle.Particle{
			Time:        rapid.Int64().Draw(t, "time"),
			Measurement: anyNameGen().Filter(func(s string) bool { return !strings.HasPrefix(s, "#") }).Draw(t, "measurement"),
		}
		for range rapid.IntRange(0, 4).Draw(t, "tags") {
			p.Tags = append(p.Tags, particle.Tag{Key: anyNameGen().Draw(t, "tag key"), Value: anyNameGen().Draw(t, "tag value")})
		}
		for range rapid.IntRange(1, 5).Draw(t, "fields") {
			p.Fields = append(p.Fields, particle.Field{Key: anyNameGen().Draw(t, "field key"), Value: anyValueGen().Draw(t, "value")})
		}
		p = *lineProtocolAgrees(p)
		want, wantErr := referenceEncode(&p, prec)
		var e particle.Encoder
		e.SetPrecision(prec)
		err := e.Encode(&p)
		checkErr := particle.CheckEncodable(&p)
		if wantErr != nil {
			require.EqualError(t, err, wantErr.Error())
			require.EqualError(t, checkErr, wantErr.Error())
			require.Empty(t, e.Bytes())
			return
		}
		require.NoError(t, err)
		require.NoError(t, checkErr)
		require.Equal(t, string(want), string(e.Bytes()))
	})
}

// TestCheckEncodableAgreesWithEncode checks that CheckEncodable, which
// writes nothing, fails exactly where Encode fails, with its error, on any
// particle: also on those where InfluxDB and line protocol disagree
// (control characters in names and values), which
// TestEncoderMatchesLineProtocol leaves out.
func TestCheckEncodableAgreesWithEncode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := particle.Particle{Time: rapid.Int64().Draw(t, "time"), Measurement: anyNameGen().Draw(t, "measurement")}
		for range rapid.IntRange(0, 4).Draw(t, "tags") {
			p.Tags = append(p.Tags, particle.Tag{Key: anyNameGen().Draw(t, "tag key"), Value: anyNameGen().Draw(t, "tag value")})
		}
		for range rapid.IntRange(0, 5).Draw(t, "fields") {
			p.Fields = append(p.Fields, particle.Field{Key: anyNameGen().Draw(t, "field key"), Value: anyValueGen().Draw(t, "value")})
		}
		var e particle.Encoder
		err := e.Encode(&p)
		checkErr := particle.CheckEncodable(&p)
		if err != nil {
			require.EqualError(t, checkErr, err.Error())
			return
		}
		require.NoError(t, checkErr)
	})
}

// TestCheckEncodableAllocatesNothing checks that checking a particle of a
// usual size costs no allocation: sources check every particle.
func TestCheckEncodableAllocatesNothing(t *testing.T) {
	p := particle.Particle{Measurement: "env", Tags: []particle.Tag{{Key: "room", Value: "a"}},
		Fields: []particle.Field{{Key: "temp", Value: particle.Float(21.5)}, {Key: "hum", Value: particle.Int(40)}}}
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = particle.CheckEncodable(&p) }))
}

// BenchmarkCheckEncodable measures the check every source runs on every
// particle it takes in.
func BenchmarkCheckEncodable(b *testing.B) {
	p := particle.Particle{Time: 1_700_000_000_000_000_000, Measurement: "env", Tags: []particle.Tag{{Key: "room", Value: "kitchen"}, {Key: "sensor", Value: "t-17"}},
		Fields: []particle.Field{{Key: "temp", Value: particle.Float(21.53)}, {Key: "hum", Value: particle.Int(40)}, {Key: "ok", Value: particle.Bool(true)}}}
	for b.Loop() {
		if err := particle.CheckEncodable(&p); err != nil {
			b.Fatal(err)
		}
	}
}
