package particle

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
)

// fracDigits is the most fractional digits appendFloat writes itself.
// Below 1e6, |f|·10^fracDigits stays under 1e15, where the float64
// product is within a sixteenth of the exact one, and the decimals that
// read back as f, so scaled, within an eighth of it: at most one integer
// can be the digits of such a decimal, and it is the one nearest to the
// float64 product.
const (
	fracDigits = 9
	fracScale  = 1e9
)

// appendFloat appends f as strconv.AppendFloat(dst, f, 'g', -1, 64) does:
// the shortest decimal that reads back as f. Sensor readings are mostly
// short decimals such as 21.5, which it writes without the general
// algorithm. It takes m, the integer nearest to |f|·10^9; if m/10^9 (a
// division of two exact float64, which rounds as parsing the decimal
// does) reads back as |f|, the decimal with m's digits is the only one
// with at most 9 fractional digits to do so (see fracDigits), hence the
// shortest once its trailing zeros are dropped. Otherwise, or outside the
// range where 'g' writes no exponent, it leaves f to strconv.
func appendFloat(dst []byte, f float64) []byte {
	a := math.Abs(f)
	if a >= 1e-4 && a < 1e6 {
		m := uint64(a*fracScale + 0.5)
		if float64(m)/fracScale == a {
			m, k := stripZeros(m)
			if f < 0 {
				dst = append(dst, '-')
			}
			return appendDecimal(dst, m, k)
		}
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// stripZeros returns m·10^-fracDigits as n·10^-k with the fewest
// fractional digits k, dropping the trailing zeros of m a power of two of
// them at a time.
func stripZeros(m uint64) (n uint64, k int) {
	k = fracDigits
	if m%1e8 == 0 {
		m /= 1e8
		k -= 8
	}
	if k >= 4 && m%1e4 == 0 {
		m /= 1e4
		k -= 4
	}
	if k >= 2 && m%100 == 0 {
		m /= 100
		k -= 2
	}
	if k >= 1 && m%10 == 0 {
		m /= 10
		k--
	}
	return m, k
}

// appendDecimal appends m·10^-k with k fractional digits, as 'g' writes
// it.
func appendDecimal(dst []byte, m uint64, k int) []byte {
	n := decimalLen(m)
	if n <= k {
		dst = append(dst, "0."...)
		for range k - n {
			dst = append(dst, '0')
		}
		return appendUint(dst, m)
	}
	dst = appendUint(dst, m)
	if k == 0 {
		return dst
	}
	// The point goes before the last k digits, which move up one place.
	dst = append(dst, 0)
	end := len(dst) - 1
	for i := end; i > end-k; i-- {
		dst[i] = dst[i-1]
	}
	dst[end-k] = '.'
	return dst
}

// pow10u holds the powers of ten that fit in a uint64.
var pow10u = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// decimalLen returns the number of decimal digits of u.
func decimalLen(u uint64) int {
	// 1233/4096 is just above log10(2): t is the number of digits, or one
	// less. u|1 has as many digits as u, and one for 0.
	u |= 1
	t := bits.Len64(u) * 1233 >> 12
	if u < pow10u[t] {
		return t
	}
	return t + 1
}

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// appendUint appends u in decimal, as strconv.AppendUint(dst, u, 10)
// does, but writes the digits where they go, two at a time, instead of
// copying them there from a scratch buffer: numbers are most of a line.
func appendUint(dst []byte, u uint64) []byte {
	n := decimalLen(u)
	dst = slices.Grow(dst, n)
	i := len(dst) + n
	dst = dst[:i]
	for u >= 100 {
		q := u / 100
		r := (u - q*100) * 2
		i -= 2
		dst[i], dst[i+1] = digitPairs[r], digitPairs[r+1]
		u = q
	}
	if u >= 10 {
		dst[i-2], dst[i-1] = digitPairs[2*u], digitPairs[2*u+1]
	} else {
		dst[i-1] = byte('0' + u)
	}
	return dst
}

// appendInt appends i in decimal, as strconv.AppendInt(dst, i, 10) does.
func appendInt(dst []byte, i int64) []byte {
	if i < 0 {
		// -i overflows for math.MinInt64, but its uint64 is right.
		return appendUint(append(dst, '-'), uint64(-i))
	}
	return appendUint(dst, uint64(i))
}
