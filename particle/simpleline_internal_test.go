package particle

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// entry is what one Decode call yields, with Line and Raw after it.
type entry struct {
	p    Particle
	err  string
	de   DecodeError
	line int
	raw  string
}

// decodeEntries decodes d to its end or its first read error.
func decodeEntries(d *Decoder) []entry {
	var out []entry
	for {
		var e entry
		err := d.Decode(&e.p)
		e.line, e.raw = d.Line(), string(d.Raw())
		if err != nil {
			e.err = err.Error()
			var de *DecodeError
			if errors.As(err, &de) {
				e.de = *de
				e.de.Err = nil
			}
		}
		out = append(out, e)
		if err != nil && e.de.Line == 0 {
			return out
		}
	}
}

// checkSimpleMatchesLineProtocol decodes in with and without decodeSimple,
// from bytes and from readers of several read sizes, and requires the same
// particles, errors, lines and raw text.
func checkSimpleMatchesLineProtocol(t *testing.T, in []byte, cfg DecoderConfig) {
	t.Helper()
	readErr := errors.New("broken")
	variants := []struct {
		name string
		new  func() *Decoder
	}{
		{"bytes", func() *Decoder { d, _ := NewDecoderBytes(in, "t.lp", cfg); return d }},
		{"reader", func() *Decoder {
			d, _ := NewDecoder(iotest.HalfReader(bytes.NewReader(in)), "t.lp", cfg)
			return d
		}},
		{"small reads", func() *Decoder {
			d, _ := NewDecoder(iotest.OneByteReader(bytes.NewReader(in)), "t.lp", cfg)
			return d
		}},
		{"read error", func() *Decoder {
			d, _ := NewDecoder(iotest.HalfReader(io.MultiReader(bytes.NewReader(in), iotest.ErrReader(readErr))), "t.lp", cfg)
			return d
		}},
	}
	for _, v := range variants {
		ref := v.new()
		ref.noSimple = true
		want := decodeEntries(ref)
		got := decodeEntries(v.new())
		require.Equal(t, want, got, "%s, input %q", v.name, in)
	}
}

func TestDecodeSimpleMatchesLineProtocol(t *testing.T) {
	for _, in := range []string{
		"env,node=12,room=lib1 temperature=22.08,humidity=51.53,voltage=2.81,par=20i,tsr=28i 1163438041250000000\n",
		"m f=1 1\nm f=2 2\r\nm f=3 3\r\n\nm,a=1 f=4 4\n# c\nm f=5 5",
		"m,b=2,a=1 s=\"x y\",i=-1i,u=2u,t=T,f=-1e3,g=.5,h=5.,k=-0.0,z=0,n=12345678901234567890 -5\n",
		"m f=1 1\nm f=x 2\nm f=3 3\nm,a=1,a=2 f=1 4\nm f=1,f=2 5\nm f=6 6\n",
		"m f=1 1\nm s=\"unterminated\nm f=3 3\n",
		"m f=1 99999999999999999999\nm f=1 9223372036854775807\nm f=1 -9223372036854775808\nm i=9223372036854775808i 1\n",
		"m f=0.30000000000000004,g=9007199254740993.0,h=1.00000000000000000000001 1\n",
		"m f=1 1\n  m f=2 2\nm  f=3 3\nm f=4  4\nm f=5 4 \n",
		"m f=1\nm f=2 2\n",
		"m s=\"a\\\"b\" 1\nm s=\"\xff\" 2\nm\\ x f=1 3\nmé f=1 4\n",
		"m f=1 1\nm f=1 2",
		"m f=inf 1\nm f=-Inf 2\nm f=NaN 3\nm f=1e400 4\nm b=true,c=False,d=tRUE 5\n",
	} {
		for _, prec := range []Precision{Nanosecond, Microsecond, Second} {
			checkSimpleMatchesLineProtocol(t, []byte(in), DecoderConfig{Precision: prec, StartLine: 3})
			checkSimpleMatchesLineProtocol(t, []byte(in), DecoderConfig{Precision: prec, DefaultTime: func() int64 { return 7 }})
		}
	}
}

// TestResetAllocatesNothing decodes small inputs of plain lines, as MQTT
// payloads are, with one Decoder: neither the reset nor the line
// allocates, but for the slabs, one per few hundred lines.
func TestResetAllocatesNothing(t *testing.T) {
	d, err := NewDecoderBytes(nil, "mqtt", DecoderConfig{})
	require.NoError(t, err)
	payload := []byte("env,node=12 temperature=22.08,humidity=51.53 1163438041250000000\n")
	var p Particle
	allocs := testing.AllocsPerRun(1000, func() {
		d.ResetBytes(payload, "mqtt")
		if err := d.Decode(&p); err != nil {
			t.Fatal(err)
		}
	})
	require.Less(t, allocs, 0.1)
}

// TestDecodeSimpleNumbersMatchLineProtocol decodes the numbers of
// TestPlainNumber as field values, with each suffix, both ways.
func TestDecodeSimpleNumbersMatchLineProtocol(t *testing.T) {
	var in bytes.Buffer
	for _, s := range testNumbers {
		for _, suffix := range []string{"", "i", "u"} {
			fmt.Fprintf(&in, "m f=%s%s 1\nm f=%s%s,g=1 2\n", s, suffix, s, suffix)
		}
	}
	checkSimpleMatchesLineProtocol(t, in.Bytes(), DecoderConfig{})
}

// testNumbers are numbers in plain and not so plain forms.
var testNumbers = []string{"0", "-0", "1", "22.08", "-51.53", "9007199254740992", "9007199254740993",
	"0.1", ".5", "-.5", "5.", "123456789.123456789", "1.0000000000000000000001", "0000000000000000001.5",
	"1.5e3", "1.2.3", "-", ".", "--1", "1-2", "-1234567890123456789", "12345678901234567890",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	"18446744073709551615", "18446744073709551616", "4.9e-324", "1e400"}

// TestPlainNumber checks plainNumber against strconv, which line
// protocol parses numbers with: whatever it decodes, strconv decodes the
// same.
func TestPlainNumber(t *testing.T) {
	for _, s := range testNumbers {
		for _, suffix := range []string{"", "i", "u"} {
			line := []byte(s + suffix + ",")
			v, end, ok := plainNumber(line, 0)
			if !ok {
				continue
			}
			require.Equal(t, len(line)-1, end, s+suffix)
			switch suffix {
			case "i":
				want, err := strconv.ParseInt(s, 10, 64)
				require.NoError(t, err, s+suffix)
				require.Equal(t, Int(want), v, s+suffix)
			case "u":
				want, err := strconv.ParseUint(s, 10, 64)
				require.NoError(t, err, s+suffix)
				require.Equal(t, Uint(want), v, s+suffix)
			default:
				want, err := strconv.ParseFloat(s, 64)
				require.NoError(t, err, s)
				require.Equal(t, math.Float64bits(want), math.Float64bits(v.FloatValue()), s)
			}
		}
	}
}

// FuzzDecodeSimple checks that lines decoded by decodeSimple decode as
// they do through lineprotocol.Decoder, errors and positions included.
func FuzzDecodeSimple(f *testing.F) {
	for i, s := range []string{
		"env,node=12,room=lib1 temperature=22.08,humidity=51.53,voltage=2.81,par=20i,tsr=28i 1163438041250000000\n",
		"m,b=2,a=1 s=\"x\",i=1i,u=2u,t=T,f=-1.5 -5\r\n# c\n\n  m f=1\n",
		"m f=1 1\nm f=x 2\nm,a=1,a=2 f=1 3\nm s=\"open\nm f=1 4",
		"m f=1.00000000000000000001,g=123456789012345678901 1\n",
	} {
		f.Add([]byte(s), uint8(i%4))
	}
	f.Fuzz(func(t *testing.T, in []byte, prec uint8) {
		cfg := DecoderConfig{Precision: Precision(prec % 4)}
		checkSimpleMatchesLineProtocol(t, in, cfg)
		cfg.DefaultTime = func() int64 { return 42 }
		checkSimpleMatchesLineProtocol(t, in, cfg)
	})
}
