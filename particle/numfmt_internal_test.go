package particle

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestAppendFloatMatchesStrconv(t *testing.T) {
	check := func(f float64) {
		t.Helper()
		want := strconv.AppendFloat(nil, f, 'g', -1, 64)
		if got := appendFloat(nil, f); string(got) != string(want) {
			t.Fatalf("appendFloat(%b) = %s, want %s", f, got, want)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 0.3, 0.1 + 0.2, 1e-4, 1e-4 * (1 - 1e-16), 9.999999999999999e-5,
		1e6, math.Nextafter(1e6, 0), 999999.9999999999, 123456.789, 0.000123456789012345, 21.5, -22.08, 51.53, 2.81,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 1e15, 1e21, 5e-324, 0.5, 0.05, 0.25e-3} {
		check(f)
		check(math.Nextafter(f, math.Inf(1)))
		check(math.Nextafter(f, math.Inf(-1)))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		// Short decimals, as sensors write them, at every scale.
		digits := r.Int64N(1_000_000_000)
		scale := r.IntN(20) - 6
		f, err := strconv.ParseFloat(strconv.FormatInt(digits, 10)+"e"+strconv.Itoa(-scale), 64)
		if err != nil {
			t.Fatal(err)
		}
		check(f)
		check(-f)
		check(math.Nextafter(f, 0))
		// Arbitrary bit patterns, and arithmetic results.
		check(math.Float64frombits(r.Uint64()))
		check(r.Float64() * math.Pow(10, float64(r.IntN(14)-5)))
	}
}

func BenchmarkAppendFloat(b *testing.B) {
	for _, bc := range []struct {
		name string
		f    float64
	}{{"short", 22.08}, {"integer", 20}, {"long", 22.083333333333332}, {"exponent", 1.5e-7}} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, 32)
			b.Run("strconv", func(b *testing.B) {
				for b.Loop() {
					buf = strconv.AppendFloat(buf[:0], bc.f, 'g', -1, 64)
				}
			})
			b.Run("appendFloat", func(b *testing.B) {
				for b.Loop() {
					buf = appendFloat(buf[:0], bc.f)
				}
			})
		})
	}
}

func TestAppendIntMatchesStrconv(t *testing.T) {
	check := func(i int64) {
		t.Helper()
		if got, want := appendInt([]byte("x"), i), strconv.AppendInt([]byte("x"), i, 10); string(got) != string(want) {
			t.Fatalf("appendInt(%d) = %s, want %s", i, got, want)
		}
		u := uint64(i)
		if got, want := appendUint(nil, u), strconv.AppendUint(nil, u, 10); string(got) != string(want) {
			t.Fatalf("appendUint(%d) = %s, want %s", u, got, want)
		}
	}
	for _, i := range []int64{0, 1, 9, 10, 99, 100, math.MaxInt64, math.MinInt64, -1} {
		check(i)
	}
	for p := int64(1); p <= 1e18; p *= 10 {
		for _, d := range []int64{-1, 0, 1} {
			check(p + d)
			check(-p - d)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		check(int64(r.Uint64() >> r.IntN(64)))
	}
}

func BenchmarkAppendInt(b *testing.B) {
	buf := make([]byte, 0, 32)
	for _, i := range []int64{406, 1163462345109000000} {
		b.Run(strconv.FormatInt(i, 10), func(b *testing.B) {
			b.Run("strconv", func(b *testing.B) {
				for b.Loop() {
					buf = strconv.AppendInt(buf[:0], i, 10)
				}
			})
			b.Run("appendInt", func(b *testing.B) {
				for b.Loop() {
					buf = appendInt(buf[:0], i)
				}
			})
		})
	}
}
