package particle_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/internal/lpcases"
	"github.com/sensorstorm/sensorstorm/particle"
)

// decoded is what decoding an input yields, in order: each item is a
// particle or a *DecodeError.
type decoded []any

// decodeAll decodes d to the end, failing the test on errors other than
// *DecodeError.
func decodeAll(t testing.TB, d *particle.Decoder) decoded {
	t.Helper()
	var out decoded
	for {
		var p particle.Particle
		err := d.Decode(&p)
		if err == io.EOF {
			return out
		}
		var de *particle.DecodeError
		if !errors.As(err, &de) {
			require.NoError(t, err)
			out = append(out, p)
			continue
		}
		out = append(out, de)
	}
}

func decodeString(t testing.TB, in string, cfg particle.DecoderConfig) decoded {
	t.Helper()
	d, err := particle.NewDecoderBytes([]byte(in), "test.lp", cfg)
	require.NoError(t, err)
	return decodeAll(t, d)
}

func tags(kv ...string) []particle.Tag {
	var ts []particle.Tag
	for i := 0; i < len(kv); i += 2 {
		ts = append(ts, particle.Tag{Key: kv[i], Value: kv[i+1]})
	}
	return ts
}

func fields(kv ...any) []particle.Field {
	var fs []particle.Field
	for i := 0; i < len(kv); i += 2 {
		fs = append(fs, particle.Field{Key: kv[i].(string), Value: kv[i+1].(particle.Value)})
	}
	return fs
}

func decodeErr(line, col int, err error) *particle.DecodeError {
	return &particle.DecodeError{Source: "test.lp", Line: line, Column: col, Err: err}
}

// errMessage stands for a line-protocol syntax error with the given text.
type errMessage string

func (e errMessage) Error() string { return string(e) }

// normalize makes syntax errors comparable with errMessage and range
// errors with ErrValueOutOfRange, keeping the position.
func normalize(out decoded) decoded {
	for i, x := range out {
		de, ok := x.(*particle.DecodeError)
		if !ok {
			continue
		}
		n := *de
		switch {
		case errors.Is(de.Err, particle.ErrValueOutOfRange):
			n.Err = particle.ErrValueOutOfRange
		case errors.Is(de.Err, particle.ErrNoTime), errors.Is(de.Err, particle.ErrDuplicateTag),
			errors.Is(de.Err, particle.ErrDuplicateField), errors.Is(de.Err, particle.ErrUnterminatedString):
		default:
			n.Err = errMessage(de.Err.Error())
		}
		out[i] = &n
	}
	return out
}

func TestDecode(t *testing.T) {
	const sensorLine = `env,node=12,room=lib1 temperature=22.08,humidity=51.53,voltage=2.81,par=20i,tsr=28i 1163438041250000000`
	tests := []struct {
		name string
		in   string
		cfg  particle.DecoderConfig
		want decoded
	}{
		{
			name: "sensor line",
			in:   sensorLine + "\n",
			cfg:  particle.DecoderConfig{Origin: 7},
			want: decoded{particle.Particle{
				Time: 1163438041250000000, Origin: 7, Seq: 1, Measurement: "env",
				Tags: tags("node", "12", "room", "lib1"),
				Fields: fields("temperature", particle.Float(22.08), "humidity", particle.Float(51.53),
					"voltage", particle.Float(2.81), "par", particle.Int(20), "tsr", particle.Int(28)),
			}},
		},
		{
			name: "all value kinds, no final newline",
			in:   `m f=-1.5e3,i=-3i,u=18446744073709551615u,s="say \"hi\" \\ now",t=true,F=F,e="" -5`,
			want: decoded{particle.Particle{
				Time: -5, Seq: 1, Measurement: "m",
				Fields: fields("f", particle.Float(-1500), "i", particle.Int(-3), "u", particle.Uint(math.MaxUint64),
					"s", particle.String(`say "hi" \ now`), "t", particle.Bool(true), "F", particle.Bool(false),
					"e", particle.String("")),
			}},
		},
		{
			name: "tags sorted",
			in:   "m,c=3,a=1,b=2 f=1 1\n",
			want: decoded{particle.Particle{Time: 1, Seq: 1, Measurement: "m", Tags: tags("a", "1", "b", "2", "c", "3"), Fields: fields("f", particle.Float(1))}},
		},
		{
			name: "escapes",
			in:   `my\ m\,x=y,t\ k\=1=v\,a\ l\=ue f\=k\ ey="q\\\"",g\,=1i 1` + "\n",
			want: decoded{particle.Particle{
				Time: 1, Seq: 1, Measurement: "my m,x=y",
				Tags:   tags("t k=1", "v,a l=ue"),
				Fields: fields(`f=k ey`, particle.String(`q\"`), "g,", particle.Int(1)),
			}},
		},
		{
			name: "blank lines, comments, CRLF, trailing spaces",
			in:   "\n# comment\r\n   \nm f=1 1  \r\n\n  # another\nm f=2 2\n\n",
			want: decoded{
				particle.Particle{Time: 1, Seq: 1, Measurement: "m", Fields: fields("f", particle.Float(1))},
				particle.Particle{Time: 2, Seq: 2, Measurement: "m", Fields: fields("f", particle.Float(2))},
			},
		},
		{
			// As InfluxDB reads them: \\ and \" are the only escapes.
			name: "string escapes",
			in:   "m s=\"a\\nb\" 1\nm f=1 2\n" + `m s="C:\temp\new",t="\\n\\\"\r\x",u="\\",v="a` + "\tb\rc" + `" 3` + "\n",
			want: decoded{
				particle.Particle{Time: 1, Seq: 1, Measurement: "m", Fields: fields("s", particle.String(`a\nb`))},
				particle.Particle{Time: 2, Seq: 2, Measurement: "m", Fields: fields("f", particle.Float(1))},
				particle.Particle{Time: 3, Seq: 3, Measurement: "m", Fields: fields("s", particle.String(`C:\temp\new`),
					"t", particle.String(`\n\"\r\x`), "u", particle.String(`\`), "v", particle.String("a\tb\rc"))},
			},
		},
		{
			name: "escape letters in names stay",
			in:   `m\n,k\t=v\r\\n f\n=1 1` + "\n",
			want: decoded{particle.Particle{Time: 1, Seq: 1, Measurement: `m\n`, Tags: tags(`k\t`, `v\r\\n`), Fields: fields(`f\n`, particle.Float(1))}},
		},
		{
			// InfluxDB takes control characters in tag values.
			name: "control characters in tag values",
			in:   "m,k=x\x01y,l=\tz\x7f,n=a\\nb\x1f s=\"\x02\\n\" 1\nm,k=\x01 f=1 2\n",
			want: decoded{
				particle.Particle{Time: 1, Seq: 1, Measurement: "m", Tags: tags("k", "x\x01y", "l", "\tz\x7f", "n", "a\\nb\x1f"), Fields: fields("s", particle.String("\x02\\n"))},
				particle.Particle{Time: 2, Seq: 2, Measurement: "m", Tags: tags("k", "\x01"), Fields: fields("f", particle.Float(1))},
			},
		},
		{
			name: "control characters elsewhere",
			in:   "m\x01 f=1 1\nm,k\x01=v f=1 1\nm f\x01=1 1\nm,k=\x00 f=1 1\nm,k=v f=1\x01 1\n",
			want: decoded{
				decodeErr(1, 2, errMessage(`expected tag key or field but found '\x01' instead`)),
				decodeErr(2, 3, errMessage(`expected '=' after tag key "k", but got '\x01' instead`)),
				decodeErr(3, 4, errMessage(`want '=' after field key "f", found '\x01'`)),
				decodeErr(4, 5, errMessage(`expected tag value after tag key "k", but none found`)),
				decodeErr(5, 9, errMessage(`cannot parse value for field key "f": invalid float value syntax`)),
			},
		},
		{
			// A private-use character of the input is not mistaken for
			// one that stands for another.
			name: "private use",
			in:   "m,k=\ue000\x01\ue001 s=\"\ue000\ue06e\\n\" 1\n",
			want: decoded{particle.Particle{Time: 1, Seq: 1, Measurement: "m", Tags: tags("k", "\ue000\x01\ue001"), Fields: fields("s", particle.String("\ue000\ue06e\\n"))}},
		},
		{
			// A raw newline ends the line, also inside a string: the
			// string's rest is a line of its own.
			name: "raw newline in a string",
			in:   "m s=\"a\nb\" 1\nm f=1 2\n",
			want: decoded{
				decodeErr(1, 5, particle.ErrUnterminatedString),
				decodeErr(2, 5, errMessage(`want '=' after field key "1", found '\n'`)),
				particle.Particle{Time: 2, Seq: 1, Measurement: "m", Fields: fields("f", particle.Float(1))},
			},
		},
		{
			name: "unterminated string takes only its line",
			in:   "env t=1 1\n  env t=\"unterminated\nenv t=2 2\nenv s=\"ok\" 3\nenv s=\"x 4",
			want: decoded{
				particle.Particle{Time: 1, Seq: 1, Measurement: "env", Fields: fields("t", particle.Float(1))},
				decodeErr(2, 9, particle.ErrUnterminatedString),
				particle.Particle{Time: 2, Seq: 2, Measurement: "env", Fields: fields("t", particle.Float(2))},
				particle.Particle{Time: 3, Seq: 3, Measurement: "env", Fields: fields("s", particle.String("ok"))},
				decodeErr(5, 7, errMessage("expected closing quote for string field value, found end of input")),
			},
		},
		{
			name: "duplicate field",
			in:   "m,t=1 a=1,b=2,a=3 1\nm f=1 2\n",
			want: decoded{
				decodeErr(1, 0, fmt.Errorf("%w %q", particle.ErrDuplicateField, "a")),
				particle.Particle{Time: 2, Seq: 1, Measurement: "m", Fields: fields("f", particle.Float(1))},
			},
		},
		{
			name: "default time",
			in:   "m f=1\nm f=2 5\n",
			cfg:  particle.DecoderConfig{DefaultTime: func() int64 { return 99 }},
			want: decoded{
				particle.Particle{Time: 99, Seq: 1, Measurement: "m", Fields: fields("f", particle.Float(1))},
				particle.Particle{Time: 5, Seq: 2, Measurement: "m", Fields: fields("f", particle.Float(2))},
			},
		},
		{
			name: "no time",
			in:   "m f=1 1\n\nm,t=x f=1\n",
			want: decoded{
				particle.Particle{Time: 1, Seq: 1, Measurement: "m", Fields: fields("f", particle.Float(1))},
				decodeErr(3, 0, particle.ErrNoTime),
			},
		},
		{
			name: "bad float",
			in:   "m,t=1 a=1,f=1.2.3 1\n",
			want: decoded{decodeErr(1, 13, errMessage(`cannot parse value for field key "f": invalid float value syntax`))},
		},
		{
			name: "bad bool",
			in:   "m f=tru 1\n",
			want: decoded{decodeErr(1, 5, errMessage(`cannot parse value for field key "f": invalid bool value "tru"`))},
		},
		{
			name: "unknown value type",
			in:   "m f=x 1\n",
			want: decoded{decodeErr(1, 5, errMessage(`field value has unrecognized type`))},
		},
		{
			name: "indented line",
			in:   "   m f=x 1\n",
			want: decoded{decodeErr(1, 8, errMessage(`field value has unrecognized type`))},
		},
		{
			name: "no fields",
			in:   "m,t=1\n",
			want: decoded{decodeErr(1, 6, errMessage(`expected tag key or field but found '\n' instead`))},
		},
		{
			name: "no fields after space",
			in:   "m,t=1 \n",
			want: decoded{decodeErr(1, 7, errMessage(`invalid character '\n' found at start of field key`))},
		},
		{
			name: "int out of range",
			in:   "m f=1,g=9223372036854775808i 1\n",
			want: decoded{decodeErr(1, 9, particle.ErrValueOutOfRange)},
		},
		{
			name: "uint out of range",
			in:   "m g=18446744073709551616u 1\n",
			want: decoded{decodeErr(1, 5, particle.ErrValueOutOfRange)},
		},
		{
			name: "timestamp out of range",
			in:   "m f=1  99999999999999999999 \n",
			want: decoded{decodeErr(1, 8, particle.ErrValueOutOfRange)},
		},
		{
			name: "timestamp out of range at precision",
			in:   "m f=1 9223372036854776\n",
			cfg:  particle.DecoderConfig{Precision: particle.Millisecond},
			want: decoded{decodeErr(1, 7, particle.ErrValueOutOfRange)},
		},
		{
			name: "timestamp syntax",
			in:   "m f=1 1-2\n",
			want: decoded{decodeErr(1, 7, errMessage(`invalid timestamp: invalid syntax`))},
		},
		{
			name: "text after timestamp",
			in:   "m f=1 1 x\n",
			want: decoded{decodeErr(1, 9, errMessage(`unexpected text after timestamp ("x")`))},
		},
		{
			name: "duplicate tag",
			in:   "m,b=1,a=2,b=3 f=1 1\n",
			want: decoded{decodeErr(1, 0, fmt.Errorf("%w %q", particle.ErrDuplicateTag, "b"))},
		},
		{
			name: "start line",
			in:   "m f=1 1\nm f=x 1\n",
			cfg:  particle.DecoderConfig{StartLine: 41},
			want: decoded{
				particle.Particle{Time: 1, Seq: 1, Measurement: "m", Fields: fields("f", particle.Float(1))},
				decodeErr(42, 5, errMessage(`field value has unrecognized type`)),
			},
		},
		{
			name: "invalid utf-8",
			in:   "m s=\"\xff\" 1\n",
			want: decoded{decodeErr(1, 6, errMessage(`invalid utf-8 sequence in token "\xff"`))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := normalize(decodeVariants(t, []byte(tt.in), tt.cfg))
			want := normalize(tt.want)
			assert.Equal(t, want, got)
		})
	}
}

func TestDecodeContinuesAfterMalformedLine(t *testing.T) {
	in := "env,node=1 t=20.5 1000\nenv,node=2 t=hot 2000\nenv,node=3 t=21.5 3000\n"
	d, err := particle.NewDecoderBytes([]byte(in), "feed", particle.DecoderConfig{Origin: 3})
	require.NoError(t, err)

	var p particle.Particle
	require.NoError(t, d.Decode(&p))
	assert.Equal(t, 1, d.Line())
	assert.Equal(t, "1", p.Tags[0].Value)

	err = d.Decode(&p)
	var de *particle.DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "feed", de.Source)
	assert.Equal(t, 2, de.Line)
	assert.Equal(t, 14, de.Column)
	assert.Equal(t, 2, d.Line())
	assert.EqualError(t, err, "particle: decode feed:2:14: field value has unrecognized type")

	var q particle.Particle
	require.NoError(t, d.Decode(&q))
	assert.Equal(t, 3, d.Line())
	assert.Equal(t, particle.Particle{
		Time: 3000, Origin: 3, Seq: 2, Measurement: "env",
		Tags: tags("node", "3"), Fields: fields("t", particle.Float(21.5)),
	}, q)
	assert.Equal(t, io.EOF, d.Decode(&q))
	assert.Equal(t, io.EOF, d.Decode(&q))
}

func TestDecodeRaw(t *testing.T) {
	long := "m s=\"" + strings.Repeat("x", 100<<10) + "\" 1"
	in := "m f=1 1\r\n  m f=hot 2\r\nm s=\"open\nm f=3 3\n" + long + "\n"
	want := []string{"m f=1 1", "  m f=hot 2", `m s="open`, "m f=3 3", long[:64<<10]}
	for _, n := range []int{1, 7, 1 << 20} {
		d, err := particle.NewDecoder(&chunkReader{data: []byte(in), n: n}, "test.lp", particle.DecoderConfig{})
		require.NoError(t, err)
		var got []string
		var p particle.Particle
		for d.Decode(&p) != io.EOF {
			got = append(got, string(d.Raw()))
		}
		assert.Equal(t, want, got, "chunks of %d bytes", n)
	}
}

// TestDecodeRawLastLine reads the last line, without a newline, for Raw
// after the buffer's first line was dropped to make room: Raw must return
// the line where it was moved.
func TestDecodeRawLastLine(t *testing.T) {
	d, err := particle.NewDecoder(iotest.HalfReader(strings.NewReader("m f=1 1\nm flow rate 2")), "test.lp", particle.DecoderConfig{})
	require.NoError(t, err)
	var p particle.Particle
	require.NoError(t, d.Decode(&p))
	require.Error(t, d.Decode(&p))
	require.Equal(t, "m flow rate 2", string(d.Raw()))
}

func TestDecodeErrorMessage(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		err  particle.DecodeError
		want string
	}{
		{particle.DecodeError{Source: "a.lp", Line: 3, Column: 7, Err: cause}, "particle: decode a.lp:3:7: boom"},
		{particle.DecodeError{Source: "sensors/env", Line: 3, Err: cause}, "particle: decode sensors/env:3: boom"},
		{particle.DecodeError{Line: 3, Column: 7, Err: cause}, "particle: decode line 3:7: boom"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.err.Error())
		assert.ErrorIs(t, &tt.err, cause)
	}
}

func TestDecoderConfigValidate(t *testing.T) {
	_, err := particle.NewDecoderBytes(nil, "x", particle.DecoderConfig{Precision: 4})
	require.ErrorIs(t, err, particle.ErrUnknownPrecision)
	_, err = particle.NewDecoder(strings.NewReader(""), "x", particle.DecoderConfig{StartLine: -1})
	require.Error(t, err)
}

// chunkReader returns at most n bytes per Read, to exercise the decoder's
// buffering at every boundary.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// decodeVariants decodes in from bytes and through readers of various
// chunk sizes, requiring the same result from each.
func decodeVariants(t testing.TB, in []byte, cfg particle.DecoderConfig) decoded {
	t.Helper()
	d, err := particle.NewDecoderBytes(in, "test.lp", cfg)
	require.NoError(t, err)
	want := decodeAll(t, d)
	for _, n := range []int{1, 7, 300, 1 << 20} {
		d, err := particle.NewDecoder(&chunkReader{data: in, n: n}, "test.lp", cfg)
		require.NoError(t, err)
		require.Equal(t, want, decodeAll(t, d), "chunks of %d bytes", n)
	}
	return want
}

func TestDecodeLongLines(t *testing.T) {
	long := strings.Repeat("x", 70<<10) // longer than any internal buffer
	var in bytes.Buffer
	fmt.Fprintf(&in, "m,t=%s s=\"%s\",f=1 1\n", long[:300], long)
	fmt.Fprintf(&in, "%s f=1 2\n", long[:5000])
	fmt.Fprintf(&in, "m s=\"%s\",f=1.2.3 3\n", long[:600])
	fmt.Fprintf(&in, "m s=\"%s\" 99999999999999999999\n", long[:600])
	fmt.Fprintf(&in, "%sm f=x 5\n", strings.Repeat(" ", 400))
	in.WriteString("m f=1 6\n")

	got := normalize(decodeVariants(t, in.Bytes(), particle.DecoderConfig{}))
	want := normalize(decoded{
		particle.Particle{Time: 1, Seq: 1, Measurement: "m", Tags: tags("t", long[:300]), Fields: fields("s", particle.String(long), "f", particle.Float(1))},
		particle.Particle{Time: 2, Seq: 2, Measurement: long[:5000], Fields: fields("f", particle.Float(1))},
		decodeErr(3, 610, errMessage(`cannot parse value for field key "f": invalid float value syntax`)),
		decodeErr(4, 608, particle.ErrValueOutOfRange),
		decodeErr(5, 405, errMessage(`field value has unrecognized type`)),
		particle.Particle{Time: 6, Seq: 3, Measurement: "m", Fields: fields("f", particle.Float(1))},
	})
	require.Len(t, got, len(want))
	for i := range want {
		// Not assert.Equal, whose message would print the long strings.
		assert.True(t, reflect.DeepEqual(want[i], got[i]), "item %d", i)
	}
}

func TestDecodeFile(t *testing.T) {
	f, err := os.Open("testdata/sensors.lp")
	require.NoError(t, err)
	defer f.Close()
	d, err := particle.NewDecoder(f, "testdata/sensors.lp", particle.DecoderConfig{Precision: particle.Millisecond, Origin: 1})
	require.NoError(t, err)
	var ps []particle.Particle
	var errs []*particle.DecodeError
	for _, x := range decodeAll(t, d) {
		switch x := x.(type) {
		case particle.Particle:
			ps = append(ps, x)
		case *particle.DecodeError:
			errs = append(errs, x)
		}
	}
	require.Len(t, ps, 6)
	require.Len(t, errs, 1)
	assert.Equal(t, "testdata/sensors.lp:8:78: cannot parse value for field key \"voltage\": invalid float value syntax",
		strings.TrimPrefix(errs[0].Error(), "particle: decode "))
	last := ps[len(ps)-1]
	assert.Equal(t, time.Date(2004, 2, 28, 0, 59, 16, 20e6, time.UTC), last.EventTime())
	assert.Equal(t, uint64(6), last.Seq)
	v, ok := last.Field("humidity")
	require.True(t, ok)
	assert.Equal(t, particle.Float(45.7), v)
}

func TestDecodeReadError(t *testing.T) {
	boom := errors.New("boom")
	in := io.MultiReader(strings.NewReader("m f=1 1\nm f=2 2\nm f="), iotest.ErrReader(boom))
	d, err := particle.NewDecoder(in, "x", particle.DecoderConfig{})
	require.NoError(t, err)
	var p particle.Particle
	require.NoError(t, d.Decode(&p))
	require.NoError(t, d.Decode(&p))
	require.ErrorIs(t, d.Decode(&p), boom)
	require.ErrorIs(t, d.Decode(&p), boom, "the read error sticks")
	assert.Equal(t, int64(2), p.Time)
	assert.Equal(t, 3, d.Line(), "the line where the input broke off")
}

// dataErrReader returns all its data with the error, in one Read, as a
// gzip reader does at a truncated stream.
type dataErrReader struct {
	data []byte
	err  error
}

func (r *dataErrReader) Read(p []byte) (int, error) {
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, r.err
}

func TestDecodeLinesBeforeReadError(t *testing.T) {
	boom := errors.New("boom")
	d, err := particle.NewDecoder(&dataErrReader{data: []byte("m f=1 1\nm f=2 2\nm f="), err: boom}, "x", particle.DecoderConfig{})
	require.NoError(t, err)
	var p particle.Particle
	require.NoError(t, d.Decode(&p))
	assert.Equal(t, "m f=1 1", string(d.Raw()))
	require.NoError(t, d.Decode(&p))
	assert.Equal(t, int64(2), p.Time)
	require.ErrorIs(t, d.Decode(&p), boom)
	assert.Equal(t, 3, d.Line())
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestDecodeNoProgress(t *testing.T) {
	d, err := particle.NewDecoder(emptyReader{}, "x", particle.DecoderConfig{})
	require.NoError(t, err)
	var p particle.Particle
	require.ErrorIs(t, d.Decode(&p), io.ErrNoProgress)
}

func TestDecoderReset(t *testing.T) {
	d, err := particle.NewDecoderBytes([]byte("m f=1 1\n"), "topic/a", particle.DecoderConfig{Origin: 9, StartLine: 1})
	require.NoError(t, err)
	var p particle.Particle
	require.NoError(t, d.Decode(&p))
	require.Equal(t, io.EOF, d.Decode(&p))

	d.Reset(strings.NewReader("\nm f=2 2\nm f=x 3\n"), "topic/b")
	require.NoError(t, d.Decode(&p))
	assert.Equal(t, uint64(2), p.Seq, "sequence numbers go on")
	assert.Equal(t, uint32(9), p.Origin)
	assert.Equal(t, 2, d.Line(), "lines restart")
	err = d.Decode(&p)
	var de *particle.DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "topic/b", de.Source)
	assert.Equal(t, 3, de.Line)

	d.ResetBytes([]byte("m f=3 3"), "topic/c")
	require.NoError(t, d.Decode(&p))
	assert.Equal(t, uint64(3), p.Seq)
	assert.Equal(t, 1, d.Line())
}

// TestDecodedParticlesStayValid keeps every particle of a long input and
// checks them all at the end, after the decoder went through many slabs
// and arena chunks; and checks that appending to one particle's slices
// leaves its neighbours alone.
func TestDecodedParticlesStayValid(t *testing.T) {
	const n = 5000
	var in bytes.Buffer
	want := func(i int) particle.Particle {
		return particle.Particle{
			Time: int64(i), Seq: uint64(i + 1), Measurement: fmt.Sprintf("m%d", i%3),
			Tags:   tags("node", fmt.Sprint(i), "room", fmt.Sprint(i%5)),
			Fields: fields("s", particle.String(fmt.Sprintf("value %d %s", i, strings.Repeat("z", i%50))), "i", particle.Int(int64(i))),
		}
	}
	var enc particle.Encoder
	for i := range n {
		p := want(i)
		require.NoError(t, enc.Encode(&p))
	}
	in.Write(enc.Bytes())
	for _, src := range []bool{false, true} {
		var d *particle.Decoder
		var err error
		buf := bytes.Clone(in.Bytes())
		if src {
			d, err = particle.NewDecoder(bytes.NewReader(buf), "x", particle.DecoderConfig{})
		} else {
			d, err = particle.NewDecoderBytes(buf, "x", particle.DecoderConfig{})
		}
		require.NoError(t, err)
		got := decodeAll(t, d)
		clear(buf) // particles must not refer to the input
		require.Len(t, got, n)
		for i := range got {
			p := got[i].(particle.Particle)
			p.Tags = append(p.Tags, particle.Tag{Key: "zz", Value: "overwrite?"})
			p.Fields = append(p.Fields, particle.Field{Key: "zz", Value: particle.Bool(true)})
		}
		runtime.GC()
		for i := range got {
			require.Equal(t, want(i), got[i], "particle %d", i)
		}
	}
}

// TestDecodedParticlesShareTags checks that readings of one series share
// their Tags, which saves an allocation per line, and that they stay
// independent: appending to one particle's tags leaves the others alone.
func TestDecodedParticlesShareTags(t *testing.T) {
	var in []byte
	for i := range 1000 {
		in = fmt.Appendf(in, "m,node=%d,room=r%d v=%di %d\n", i%7, i%7%3, i, i)
	}
	d, err := particle.NewDecoderBytes(in, "x", particle.DecoderConfig{})
	require.NoError(t, err)
	got := decodeAll(t, d)
	require.Len(t, got, 1000)
	first := map[string][]particle.Tag{}
	for i, x := range got {
		p := x.(particle.Particle)
		want := tags("node", fmt.Sprint(i%7), "room", fmt.Sprintf("r%d", i%7%3))
		require.Equal(t, want, p.Tags, "particle %d", i)
		series := fmt.Sprint(p.Tags)
		if f, ok := first[series]; ok {
			assert.Same(t, &f[0], &p.Tags[0], "particle %d shares the tags of its series", i)
		} else {
			first[series] = p.Tags
		}
		p.Tags = append(p.Tags, particle.Tag{Key: "zz", Value: "overwrite?"})
		p.Tags[0].Value = "changed"
	}
	for i, x := range got[:7] {
		assert.Equal(t, fmt.Sprint(i%7), x.(particle.Particle).Tags[0].Value, "particle %d", i)
		assert.Len(t, x.(particle.Particle).Tags, 2, "particle %d", i)
	}
}

func TestPrecision(t *testing.T) {
	tests := []struct {
		prec  particle.Precision
		names []string
		text  string // timestamp text of the instant 1500s after the epoch plus 1ns
		ns    int64  // the instant decoded back from text
	}{
		{particle.Nanosecond, []string{"ns", "n"}, "1500000000001", 1500000000001},
		{particle.Microsecond, []string{"us", "µs", "u"}, "1500000000", 1500000000000},
		{particle.Millisecond, []string{"ms"}, "1500000", 1500000000000},
		{particle.Second, []string{"s"}, "1500", 1500000000000},
	}
	for _, tt := range tests {
		t.Run(tt.prec.String(), func(t *testing.T) {
			assert.Equal(t, tt.names[0], tt.prec.String())
			for _, name := range tt.names {
				p, err := particle.ParsePrecision(name)
				require.NoError(t, err)
				assert.Equal(t, tt.prec, p)
			}
			text, err := tt.prec.MarshalText()
			require.NoError(t, err)
			var q particle.Precision
			require.NoError(t, q.UnmarshalText(text))
			assert.Equal(t, tt.prec, q)

			p := particle.Particle{Time: 1500000000001, Measurement: "m", Fields: fields("f", particle.Int(1))}
			line, err := particle.AppendLineProtocol(nil, &p, tt.prec)
			require.NoError(t, err)
			assert.Equal(t, "m f=1i "+tt.text+"\n", string(line))

			got := decodeString(t, string(line), particle.DecoderConfig{Precision: tt.prec})
			require.Len(t, got, 1)
			assert.Equal(t, tt.ns, got[0].(particle.Particle).Time)
		})
	}
	_, err := particle.ParsePrecision("h")
	require.ErrorIs(t, err, particle.ErrUnknownPrecision)
	var q particle.Precision
	require.ErrorIs(t, q.UnmarshalText([]byte("min")), particle.ErrUnknownPrecision)
	_, err = particle.Precision(9).MarshalText()
	require.ErrorIs(t, err, particle.ErrUnknownPrecision)
	assert.Equal(t, "Precision(9)", particle.Precision(9).String())
}

type tick struct{}

func (tick) MetaType() string { return "tick" }

func TestEncode(t *testing.T) {
	tests := []struct {
		name string
		p    particle.Particle
		want string
	}{
		{
			name: "sensor reading",
			p: particle.Particle{Time: 1163438041250000000, Origin: 4, Seq: 8, Measurement: "env",
				Tags:   tags("node", "12", "room", "lib1"),
				Fields: fields("temperature", particle.Float(22.08), "par", particle.Int(20), "n", particle.Uint(3), "ok", particle.Bool(true), "state", particle.String("on"))},
			want: `env,node=12,room=lib1 temperature=22.08,par=20i,n=3u,ok=true,state="on" 1163438041250000000` + "\n",
		},
		{
			name: "escapes",
			p: particle.Particle{Time: -1, Measurement: "my m,x=y",
				Tags:   tags("t k=1", "v,a l=ue"),
				Fields: fields("f=k ey", particle.String("q\\\"\\n\t\r"))},
			want: `my\ m\,x=y,t\ k\=1=v\,a\ l\=ue f\=k\ ey="q\\\"\\n` + "\t\r\" -1\n",
		},
		{
			name: "control characters in a tag value",
			p:    particle.Particle{Measurement: "m", Tags: tags("k", "x\x01\ty\x7f"), Fields: fields("f", particle.Int(1))},
			want: "m,k=x\x01\ty\x7f f=1i 0\n",
		},
		{
			name: "unsorted tags",
			p:    particle.Particle{Measurement: "m", Tags: tags("b", "2", "a", "1"), Fields: fields("f", particle.Float(0.5))},
			want: "m,a=1,b=2 f=0.5 0\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.p.Tags)
			var e particle.Encoder
			require.NoError(t, e.Encode(&tt.p))
			assert.Equal(t, tt.want, string(e.Bytes()))
			assert.Equal(t, before, tt.p.Tags, "particle unchanged")
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		p       particle.Particle
		wantErr string
	}{
		{"meta", particle.Particle{Meta: tick{}}, "meta particle"},
		{"no fields", particle.Particle{Measurement: "m"}, "no fields"},
		{"NaN", particle.Particle{Measurement: "m", Fields: fields("f", particle.Float(math.NaN()))}, `field "f": non-finite float NaN`},
		{"invalid value", particle.Particle{Measurement: "m", Fields: fields("f", particle.Value{})}, `field "f": invalid value`},
		{"invalid utf-8 string", particle.Particle{Measurement: "m", Fields: fields("f", particle.String("\xff"))}, `field "f": invalid utf-8`},
		{"comment measurement", particle.Particle{Measurement: "#m", Fields: fields("f", particle.Int(1))}, "starts with '#'"},
		{"empty measurement", particle.Particle{Fields: fields("f", particle.Int(1))}, `invalid measurement ""`},
		{"empty tag value", particle.Particle{Measurement: "m", Tags: tags("t", ""), Fields: fields("f", particle.Int(1))}, `invalid tag value t=""`},
		{"duplicate tag", particle.Particle{Measurement: "m", Tags: tags("t", "1", "t", "2"), Fields: fields("f", particle.Int(1))}, `tag key "t" out of order`},
		{"control character", particle.Particle{Measurement: "m", Fields: fields("f\n", particle.Int(1))}, `invalid field key "f\n"`},
		{"newline in a string", particle.Particle{Measurement: "m", Fields: fields("f", particle.String("a\nb"))}, `field "f": particle: newline in a string field value: "a\nb"`},
		{"NUL in a tag value", particle.Particle{Measurement: "m", Tags: tags("t", "a\x00"), Fields: fields("f", particle.Int(1))}, `invalid tag value t="a\x00"`},
		{"carriage return in a tag value", particle.Particle{Measurement: "m", Tags: tags("t", "a\r"), Fields: fields("f", particle.Int(1))}, `invalid tag value t="a\r"`},
		{"control character in a tag key", particle.Particle{Measurement: "m", Tags: tags("\x01", "a"), Fields: fields("f", particle.Int(1))}, `invalid tag key "\x01"`},
		{"trailing backslash", particle.Particle{Measurement: `m\`, Fields: fields("f", particle.Int(1))}, `invalid measurement "m\\"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e particle.Encoder
			good := particle.Particle{Measurement: "ok", Fields: fields("f", particle.Int(1))}
			require.NoError(t, e.Encode(&good))

			err := e.Encode(&tt.p)
			require.ErrorContains(t, err, tt.wantErr)
			require.NoError(t, e.Encode(&good), "encoding goes on after an error")
			assert.Equal(t, "ok f=1i 0\nok f=1i 0\n", string(e.Bytes()), "the bad particle leaves no trace")
			assert.Equal(t, err, e.Err(), "the first error sticks")
			e.Reset()
			assert.NoError(t, e.Err())
			assert.Empty(t, e.Bytes())
		})
	}
	var e particle.Encoder
	assert.ErrorIs(t, e.Encode(&particle.Particle{Meta: tick{}}), particle.ErrMetaParticle)
	assert.ErrorIs(t, e.Encode(&particle.Particle{Measurement: "m"}), particle.ErrNoFields)
	assert.ErrorIs(t, e.Encode(&particle.Particle{Measurement: "m", Fields: fields("f", particle.String("\n"))}), particle.ErrNewlineInString)
}

func TestEncoderPrecision(t *testing.T) {
	var e particle.Encoder
	e.SetPrecision(particle.Precision(7))
	p := particle.Particle{Measurement: "m", Fields: fields("f", particle.Int(1))}
	require.ErrorIs(t, e.Encode(&p), particle.ErrUnknownPrecision)
	e.SetPrecision(particle.Second)
	p.Time = -1999999999
	require.NoError(t, e.Encode(&p))
	assert.Equal(t, "m f=1i -1\n", string(e.Bytes()), "truncated towards zero")
}

func TestAppendLineProtocol(t *testing.T) {
	p := particle.Particle{Time: 5, Measurement: "m", Fields: fields("f", particle.Int(1))}
	b, err := particle.AppendLineProtocol([]byte("# head\n"), &p, particle.Nanosecond)
	require.NoError(t, err)
	assert.Equal(t, "# head\nm f=1i 5\n", string(b))
	p.Fields = nil
	b, err = particle.AppendLineProtocol(b, &p, particle.Nanosecond)
	require.ErrorIs(t, err, particle.ErrNoFields)
	assert.Equal(t, "# head\nm f=1i 5\n", string(b))
}

// Round trip: decode(encode(p)) == p for any valid particle.

// nameChars mixes plain characters with those line protocol escapes or
// treats specially.
var nameChars = []rune("ab Z9_ ,=\"\\#.é世")

func nameGen() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		rs := rapid.SliceOfN(rapid.SampledFrom(nameChars), 1, 8).Draw(t, "runes")
		if rs[len(rs)-1] == '\\' {
			rs = append(rs, 'x') // a trailing backslash cannot be escaped
		}
		return string(rs)
	})
}

// tagValueChars adds to nameChars the control characters a tag value
// holds, as InfluxDB takes them.
var tagValueChars = append(slices.Clone(nameChars), '\t', 1, 0x1f, 0x7f)

func tagValueGen() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		rs := rapid.SliceOfN(rapid.SampledFrom(tagValueChars), 1, 8).Draw(t, "runes")
		if rs[len(rs)-1] == '\\' {
			rs = append(rs, 'x')
		}
		return string(rs)
	})
}

// stringChars are the characters of string field values: any but a
// newline, which line protocol cannot hold, with backslash sequences
// that line protocol's own decoder would take for escapes.
var stringChars = []string{"a", "é", "\\", `"`, "\t", "\r", `\n`, `\t`, `\\`, "\x00", "\x7f"}

func valueGen() *rapid.Generator[particle.Value] {
	return rapid.OneOf(
		rapid.Map(rapid.Float64().Filter(func(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }), particle.Float),
		rapid.Map(rapid.Int64(), particle.Int),
		rapid.Map(rapid.Uint64(), particle.Uint),
		rapid.Map(rapid.Bool(), particle.Bool),
		rapid.Map(rapid.String(), func(s string) particle.Value { return particle.String(strings.ReplaceAll(s, "\n", "")) }),
		rapid.Map(rapid.SliceOfN(rapid.SampledFrom(stringChars), 0, 8), func(s []string) particle.Value { return particle.String(strings.Join(s, "")) }),
	)
}

var precisionUnits = map[particle.Precision]int64{particle.Nanosecond: 1, particle.Microsecond: 1e3, particle.Millisecond: 1e6, particle.Second: 1e9}

func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prec := rapid.SampledFrom([]particle.Precision{particle.Nanosecond, particle.Microsecond, particle.Millisecond, particle.Second}).Draw(t, "precision")
		n := rapid.IntRange(1, 5).Draw(t, "particles")
		var want []particle.Particle
		var e particle.Encoder
		e.SetPrecision(prec)
		for i := range n {
			unit := precisionUnits[prec]
			p := particle.Particle{
				Time:        rapid.Int64Range(math.MinInt64/unit, math.MaxInt64/unit).Draw(t, "time") * unit,
				Origin:      2,
				Seq:         uint64(i + 1),
				Measurement: nameGen().Filter(func(s string) bool { return s[0] != '#' }).Draw(t, "measurement"),
			}
			keys := rapid.SliceOfDistinct(nameGen(), func(s string) string { return s }).Draw(t, "tag keys")
			slices.Sort(keys)
			for _, k := range keys {
				p.Tags = append(p.Tags, particle.Tag{Key: k, Value: tagValueGen().Draw(t, "tag value")})
			}
			for _, k := range rapid.SliceOfNDistinct(nameGen(), 1, 6, func(s string) string { return s }).Draw(t, "field keys") {
				p.Fields = append(p.Fields, particle.Field{Key: k, Value: valueGen().Draw(t, "value")})
			}
			require.NoError(t, e.Encode(&p))
			want = append(want, p)
		}
		d, err := particle.NewDecoderBytes(e.Bytes(), "rt", particle.DecoderConfig{Precision: prec, Origin: 2})
		require.NoError(t, err)
		for i := range want {
			var got particle.Particle
			require.NoError(t, d.Decode(&got), "input %q", e.Bytes())
			require.Equal(t, want[i], got, "input %q", e.Bytes())
		}
		var p particle.Particle
		require.Equal(t, io.EOF, d.Decode(&p))
	})
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"env,node=12,room=lib1 temperature=22.08,humidity=51.53,voltage=2.81,par=20i,tsr=28i 1163438041250000000\n",
		"m,b=2,a=1 s=\"x\\\"y\",i=1i,u=2u,t=T,f=-1e3 -5\r\n# c\n\n  m f=1\n",
		"my\\ m\\,x,t\\ k\\=1=v\\,a\\ l\\=ue f\\=k\\ ey=\"q\\\\\\\"\" 1",
		"m s=\"a\nb\" 1\nm f=x 1\nm f=1 99999999999999999999\nm,a=1,a=2 f=1\nm f=1,f=2\n",
		"env t=\"unterminated\nenv t=1 1\n",
		"m,t=1\nm\nm \n#\xff\nm f=1 1 x\n",
		"m,k=x\x01y,l=\t\ue000 s=\"C:\\new\\\\t\\\"\r\",t=\"\ue000\ue001\" 1\nm\x01 f=1 1\n",
	} {
		f.Add([]byte(s))
	}
	cases, err := lpcases.Cases()
	require.NoError(f, err)
	for _, c := range cases {
		f.Add([]byte(c.Line))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		cfg := particle.DecoderConfig{DefaultTime: func() int64 { return 42 }}
		got := decodeVariants(t, in, cfg)
		for _, x := range got {
			if de, ok := x.(*particle.DecodeError); ok {
				require.GreaterOrEqual(t, de.Line, 1)
				require.GreaterOrEqual(t, de.Column, 0)
				continue
			}
			p := x.(particle.Particle)
			require.NotEmpty(t, p.Fields)
			require.True(t, slices.IsSortedFunc(p.Tags, func(a, b particle.Tag) int { return strings.Compare(a.Key, b.Key) }))
			line, err := particle.AppendLineProtocol(nil, &p, particle.Nanosecond)
			require.NoError(t, err, "re-encoding %#v", p)
			again := decodeString(t, string(line), cfg)
			require.Len(t, again, 1, "re-decoding %q", line)
			q := again[0].(particle.Particle)
			q.Seq = p.Seq
			require.Equal(t, p, q, "re-decoding %q", line)
		}
	})
}

// sensorInput returns about size bytes of Intel Berkeley Lab style sensor
// readings, and the number of lines.
func sensorInput(size int) ([]byte, int) {
	var b []byte
	var n int
	for i := 0; len(b) < size; i++ {
		b = fmt.Appendf(b, "env,node=%d,room=lib%d temperature=%.2f,humidity=%.2f,voltage=%.2f,par=%di,tsr=%di %d\n",
			1+i%54, i%7, 15+float64(i*7%1500)/100, 30+float64(i*13%3000)/100, 2.3+float64(i%60)/100,
			i*3%300, i*11%500, 1077962400000000000+int64(i)*31e6)
		n++
	}
	return b, n
}

// BenchmarkLineProtocolDecode decodes sensor readings into particles,
// from bytes and from a reader. Each iteration also makes the bare pass
// of lineprotocol.Decoder over the same bytes, timed apart, so that
// "vs-lineprotocol" (the bare pass's time over Decoder's) compares the
// two under the same machine load; baseline=lineprotocol reports the bare
// pass alone.
func BenchmarkLineProtocolDecode(b *testing.B) {
	in, lines := sensorInput(4 << 20)
	for _, src := range []string{"bytes", "reader"} {
		b.Run("source="+src, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			var p particle.Particle
			var decoding, bare time.Duration
			for b.Loop() {
				start := time.Now()
				var d *particle.Decoder
				if src == "bytes" {
					d, _ = particle.NewDecoderBytes(in, "bench", particle.DecoderConfig{})
				} else {
					d, _ = particle.NewDecoder(bytes.NewReader(in), "bench", particle.DecoderConfig{})
				}
				n := 0
				for {
					err := d.Decode(&p)
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != lines {
					b.Fatalf("decoded %d particles, want %d", n, lines)
				}
				decoding += time.Since(start)
				b.StopTimer()
				start = time.Now()
				lineProtocolPass(b, in, lines)
				bare += time.Since(start)
				b.StartTimer()
			}
			runtime.ReadMemStats(&ms1)
			total := float64(b.N) * float64(lines)
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/total, "allocs/line")
			b.ReportMetric(total/decoding.Seconds(), "particles/s")
			b.ReportMetric(bare.Seconds()/decoding.Seconds(), "vs-lineprotocol")
		})
	}
	b.Run("baseline=lineprotocol", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			lineProtocolPass(b, in, lines)
		}
		b.ReportMetric(float64(b.N)*float64(lines)/b.Elapsed().Seconds(), "particles/s")
	})
}

// lineProtocolPass decodes in, holding lines, with lineprotocol.Decoder
// alone, keeping nothing: the floor under Decoder's cost.
func lineProtocolPass(b *testing.B, in []byte, lines int) {
	d := lineprotocol.NewDecoderWithBytes(in)
	n := 0
	for d.Next() {
		_, err := d.Measurement()
		for k := []byte{}; k != nil && err == nil; {
			k, _, err = d.NextTag()
		}
		for k := []byte{}; k != nil && err == nil; {
			k, _, err = d.NextField()
		}
		if err == nil {
			_, err = d.Time(lineprotocol.Nanosecond, time.Time{})
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	if n != lines {
		b.Fatalf("decoded %d lines, want %d", n, lines)
	}
}

func BenchmarkLineProtocolEncode(b *testing.B) {
	in, lines := sensorInput(4 << 20)
	d, err := particle.NewDecoderBytes(in, "bench", particle.DecoderConfig{})
	require.NoError(b, err)
	ps := make([]particle.Particle, 0, lines)
	for {
		var p particle.Particle
		if err := d.Decode(&p); err != nil {
			require.Equal(b, io.EOF, err)
			break
		}
		ps = append(ps, p)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	var e particle.Encoder
	for b.Loop() {
		e.Reset()
		for i := range ps {
			if err := e.Encode(&ps[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	if n := bytes.Count(e.Bytes(), []byte{'\n'}); n != lines {
		b.Fatalf("encoded %d lines, want %d", n, lines)
	}
	b.ReportMetric(float64(b.N)*float64(lines)/b.Elapsed().Seconds(), "particles/s")
}
