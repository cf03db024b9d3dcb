package particle_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/particle"
)

func TestLimitLines(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short lines pass", "ab\ncd\n", "ab\ncd\n"},
		{"a line of the limit passes", "abcd\nx", "abcd\nx"},
		{"a longer line is cut after limit+1", "abcdefgh\nxy\n", "abcde\nxy\n"},
		{"a long last line without a line feed", "ab\nabcdefgh", "ab\nabcde"},
		{"several long lines", "123456789\n\n123456789\n", "12345\n\n12345\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{
				strings.NewReader(tc.in),
				iotest.OneByteReader(strings.NewReader(tc.in)),
				iotest.HalfReader(strings.NewReader(tc.in)),
			} {
				got, err := io.ReadAll(particle.LimitLines(r, 4))
				require.NoError(t, err)
				assert.Equal(t, tc.want, string(got))
			}
		})
	}
}

// TestDecodeMaxLineLength checks that a line longer than the maximum is
// one malformed line, whatever a prefix of it decodes to, and that
// decoding goes on after it, from bytes and from readers alike.
func TestDecodeMaxLineLength(t *testing.T) {
	const limit = 32
	tooLong := func(line int) *particle.DecodeError { return decodeErr(line, limit+1, particle.ErrLineTooLong) }
	ok := func(seq uint64, ts int64) particle.Particle {
		return particle.Particle{Time: ts, Seq: seq, Measurement: "m", Fields: fields("f", particle.Float(1))}
	}
	pad := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name string
		in   string
		want decoded
	}{
		{"at the limit", "m f=1 1\nm,t=" + pad(limit-12) + " f=1 2\n", decoded{
			ok(1, 1),
			particle.Particle{Time: 2, Seq: 2, Measurement: "m", Tags: tags("t", pad(limit-12)), Fields: fields("f", particle.Float(1))},
		}},
		{"a prefix that would decode", "m f=1 " + strings.Repeat("1", 3*limit) + "\nm f=1 3\n", decoded{tooLong(1), ok(1, 3)}},
		{"a prefix with a syntax error", "m f=" + pad(3*limit) + " 1\nm f=1 3\n", decoded{tooLong(1), ok(1, 3)}},
		{"an unterminated string", "m f=\"" + pad(3*limit) + "\nm f=1 3\n", decoded{tooLong(1), ok(1, 3)}},
		{"the last line", "m f=1 1\nm f=\"" + pad(3*limit) + "\" 2", decoded{ok(1, 1), tooLong(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeVariants(t, []byte(tc.in), particle.DecoderConfig{MaxLineLength: limit})
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestDecodeLineTooLongRaw checks that the raw text of a line too long
// is its prefix, and that a reader's line is never held whole.
func TestDecodeLineTooLongRaw(t *testing.T) {
	long := "m s=\"" + strings.Repeat("y", 1<<20) + "\" 1\nm f=1 2\n"
	d, err := particle.NewDecoder(strings.NewReader(long), "big.lp", particle.DecoderConfig{MaxLineLength: 100})
	require.NoError(t, err)
	var p particle.Particle
	err = d.Decode(&p)
	require.ErrorIs(t, err, particle.ErrLineTooLong)
	assert.EqualError(t, err, "particle: decode big.lp:1:101: particle: line too long")
	assert.Equal(t, long[:101], string(d.Raw()))
	require.NoError(t, d.Decode(&p))
	assert.Equal(t, int64(2), p.Time)
	assert.Equal(t, 2, d.Line())
}

func TestDecodeSkipsByteOrderMark(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	for _, tc := range []struct {
		name string
		in   string
		want decoded
	}{
		{"at the start", bom + "m f=1 1\n", decoded{particle.Particle{Time: 1, Seq: 1, Measurement: "m", Fields: fields("f", particle.Float(1))}}},
		{"before an error, columns without it", bom + "m f=x 1\n", decoded{decodeErr(1, 5, errMessage("field value has unrecognized type"))}},
		{"only", bom, nil},
		{"not at the start", "m f=1 1\n" + bom + "m f=1 2\n", decoded{
			particle.Particle{Time: 1, Seq: 1, Measurement: "m", Fields: fields("f", particle.Float(1))},
			particle.Particle{Time: 2, Seq: 2, Measurement: bom + "m", Fields: fields("f", particle.Float(1))},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := normalize(decodeVariants(t, []byte(tc.in), particle.DecoderConfig{}))
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDecoderConfigMaxLineLength(t *testing.T) {
	for _, n := range []int{-1, particle.MaxMaxLineLength + 1} {
		_, err := particle.NewDecoderBytes(nil, "x", particle.DecoderConfig{MaxLineLength: n})
		assert.ErrorContains(t, err, "max line length", "%d", n)
	}
	_, err := particle.NewDecoder(bytes.NewReader(nil), "x", particle.DecoderConfig{MaxLineLength: particle.MaxMaxLineLength})
	assert.NoError(t, err)
}

// TestDecodeReadErrorAfterLengthCheck checks that the check of a line's
// length, which reads ahead, does not hide a read error: a last line
// without its line feed before a read error is cut short, not a particle.
func TestDecodeReadErrorAfterLengthCheck(t *testing.T) {
	boom := errors.New("boom")
	for _, last := range []string{"m f=2 2", `m\ x f=2 2`, "m f=\"2\" 2"} {
		in := io.MultiReader(strings.NewReader("m f=1 1\n"+last), iotest.ErrReader(boom))
		d, err := particle.NewDecoder(in, "x", particle.DecoderConfig{})
		require.NoError(t, err)
		var p particle.Particle
		require.NoError(t, d.Decode(&p), last)
		require.ErrorIs(t, d.Decode(&p), boom, last)
	}
}
