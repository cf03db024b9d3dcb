package state_test

import (
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/state"
)

// value is one written value, to write and read back in any order.
type value struct {
	kind int
	u    uint64
	i    int64
	f    float64
	b    bool
	s    string
}

func valueGen() *rapid.Generator[value] {
	return rapid.Custom(func(t *rapid.T) value {
		v := value{kind: rapid.IntRange(0, 5).Draw(t, "kind")}
		switch v.kind {
		case 0:
			v.u = rapid.Uint64().Draw(t, "u")
		case 1:
			v.i = rapid.Int64().Draw(t, "i")
		case 3:
			v.f = math.Float64frombits(rapid.Uint64().Draw(t, "f"))
		case 4:
			v.b = rapid.Bool().Draw(t, "b")
		case 2, 5:
			v.s = rapid.String().Draw(t, "s")
		}
		return v
	})
}

func write(w *state.Writer, v value) {
	switch v.kind {
	case 0:
		w.PutUvarint(v.u)
	case 1:
		w.PutVarint(v.i)
	case 2:
		w.PutBytes([]byte(v.s))
	case 3:
		w.PutFloat64(v.f)
	case 4:
		w.PutBool(v.b)
	case 5:
		w.PutString(v.s)
	}
}

func read(r *state.Reader, kind int) value {
	v := value{kind: kind}
	switch kind {
	case 0:
		v.u = r.ReadUvarint()
	case 1:
		v.i = r.ReadVarint()
	case 2:
		v.s = string(r.ReadBytes())
	case 3:
		v.f = r.ReadFloat64()
	case 4:
		v.b = r.ReadBool()
	case 5:
		v.s = r.ReadString()
	}
	return v
}

func same(a, b value) bool {
	if a.kind == 3 {
		return math.Float64bits(a.f) == math.Float64bits(b.f)
	}
	return a == b
}

func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vs := rapid.SliceOf(valueGen()).Draw(t, "values")
		var w state.Writer
		for _, v := range vs {
			write(&w, v)
		}
		r := state.NewReader(w.Bytes())
		for i, v := range vs {
			if got := read(r, v.kind); !same(got, v) {
				t.Fatalf("value %d: got %+v, want %+v", i, got, v)
			}
		}
		if r.Err() != nil || r.Len() != 0 {
			t.Fatalf("err %v, %d bytes left", r.Err(), r.Len())
		}
	})
}

func TestTruncatedFailsAtItsOffset(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vs := rapid.SliceOfN(valueGen(), 1, 20).Draw(t, "values")
		var w state.Writer
		for _, v := range vs {
			write(&w, v)
		}
		cut := rapid.IntRange(0, w.Len()-1).Draw(t, "cut")
		r := state.NewReader(w.Bytes()[:cut])
		for _, v := range vs {
			read(r, v.kind)
		}
		var de *state.DecodeError
		if !errors.As(r.Err(), &de) || !errors.Is(r.Err(), state.ErrTruncated) {
			t.Fatalf("err %v, want a truncation", r.Err())
		}
		if de.Offset < 0 || de.Offset > cut {
			t.Fatalf("offset %d outside [0, %d]", de.Offset, cut)
		}
	})
}

func TestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		read func(*state.Reader)
		off  int
	}{
		{"bool 2", []byte{2}, func(r *state.Reader) { r.ReadBool() }, 0},
		{"varint over 64 bits", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02},
			func(r *state.Reader) { r.ReadUvarint() }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := state.NewReader(tc.in)
			tc.read(r)
			var de *state.DecodeError
			if !errors.As(r.Err(), &de) || !errors.Is(r.Err(), state.ErrMalformed) || de.Offset != tc.off {
				t.Fatalf("err %v, want malformed at offset %d", r.Err(), tc.off)
			}
			if r.ReadUvarint() != 0 || r.ReadString() != "" {
				t.Fatal("a read after the error returned a value")
			}
		})
	}
}

func TestLengthPastTheEndIsTruncated(t *testing.T) {
	r := state.NewReader([]byte{1, 5, 'a'})
	r.ReadBool()
	r.ReadString()
	var de *state.DecodeError
	if !errors.As(r.Err(), &de) || !errors.Is(r.Err(), state.ErrTruncated) || de.Offset != 1 {
		t.Fatalf("err %v, want truncated at offset 1", r.Err())
	}
}

func TestFailSticks(t *testing.T) {
	r := state.NewReader([]byte{1, 2})
	r.ReadUvarint()
	bad := errors.New("unknown version")
	r.Fail(bad)
	r.Fail(errors.New("second"))
	var de *state.DecodeError
	if !errors.As(r.Err(), &de) || !errors.Is(r.Err(), bad) || de.Offset != 1 {
		t.Fatalf("err %v", r.Err())
	}
}

func FuzzReader(f *testing.F) {
	var w state.Writer
	w.PutUvarint(300)
	w.PutString("sensor")
	w.PutFloat64(1.5)
	w.PutBool(true)
	f.Add(w.Bytes(), []byte{0, 5, 3, 4})
	f.Fuzz(func(t *testing.T, in, kinds []byte) {
		r := state.NewReader(in)
		for _, k := range kinds {
			switch k % 7 {
			case 6:
				if n := r.ReadLen(); n > r.Len() {
					t.Fatalf("length %d past the %d bytes left", n, r.Len())
				}
			default:
				read(r, int(k%7))
			}
		}
		if err := r.Err(); err != nil {
			var de *state.DecodeError
			if !errors.As(err, &de) || de.Offset < 0 || de.Offset > len(in) {
				t.Fatalf("error %v", err)
			}
		} else if r.Offset() > len(in) {
			t.Fatalf("offset %d past %d", r.Offset(), len(in))
		}
	})
}
