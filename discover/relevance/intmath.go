package relevance

import (
	"math"
	"math/bits"
)

// lnMicro is round(10⁶·ln(p/q)) for 1 ≤ q ≤ p < 2⁶², computed in integers
// only: the binary logarithm bit by bit (32 fractional bits, by repeated
// squaring of the mantissa in Q62), then multiplied by ln 2. No float
// arithmetic is involved, so every platform gives the same value; it is
// within 1 of the exact value (the tests hold it against math.Log).
func lnMicro(p, q uint64) int64 {
	if q == 0 || p < q {
		return 0
	}
	e := bits.Len64(p) - bits.Len64(q)
	if q<<uint(e) > p {
		e--
	}
	d := q << uint(e) // d ≤ p < 2d
	// m = p/d in Q62, in [2⁶², 2⁶³).
	m, _ := bits.Div64(p>>2, p<<62, d)
	var frac uint64
	for i := range 32 {
		hi, lo := bits.Mul64(m, m)
		m = hi<<2 | lo>>62
		if m >= 1<<63 {
			m >>= 1
			frac |= 1 << uint(31-i)
		}
	}
	log2Q32 := uint64(e)<<32 | frac
	// ln 2 = 0.693147180559945309…; ln(p/q) in millionths is
	// log2Q32 · ln2 · 10⁶ / 2³², rounded half up.
	const ln2e15 = 693_147_180_559_945 // ln 2 · 10¹⁵
	hi, lo := bits.Mul64(log2Q32, ln2e15)
	const div = 1 << 32 * 1_000_000_000 // 2³² · 10⁹
	// add div/2 for rounding
	lo, c := bits.Add64(lo, div/2, 0)
	hi += c
	v, _ := bits.Div64(hi, lo, div)
	return int64(v)
}

// isqrt is ⌊√x⌋, exact: a float estimate corrected in integers.
func isqrt(x uint64) uint64 {
	r := uint64(math.Sqrt(float64(x)))
	if r > 1<<32-1 {
		r = 1<<32 - 1
	}
	for r*r > x {
		r--
	}
	for r < 1<<32-1 && (r+1)*(r+1) <= x {
		r++
	}
	return r
}

// mulDiv is ⌊a·b/c⌋ for non-negative a, b and positive c, exact when the
// quotient fits 63 bits.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(q)
}
