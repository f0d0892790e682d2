package wordvec

import (
	"math"
	"math/big"
	"math/bits"
)

// CosineUnit is the unit of every cosine this package returns: cosines are
// integers in millionths, 1,000,000 for identical directions.
const CosineUnit = 1_000_000

// cosMicro is round(CosineUnit·dot/√(na·nb)), halves rounded away from
// zero, computed in integers only (so every platform gives the same
// result); 0 when na or nb is 0. It needs dot² ≤ na·nb (Cauchy–Schwarz,
// true when dot, na and nb come from the same two integer vectors).
//
// With y = 2·10⁶·|dot|/√(na·nb), the rounded value is ⌊(y+1)/2⌋ =
// ⌊(⌊y⌋+1)/2⌋, and ⌊y⌋ = ⌊√⌊4·10¹²·dot²/(na·nb)⌋⌋.
func cosMicro(dot int64, na, nb uint64) int64 {
	if na == 0 || nb == 0 {
		return 0
	}
	neg := dot < 0
	ad := uint64(dot)
	if neg {
		ad = -ad
	}
	var y uint64
	nh, nl := bits.Mul64(na, nb)
	if nh == 0 && ad < 1<<32 {
		h, l := bits.Mul64(4*CosineUnit*CosineUnit, ad*ad)
		if h < nl {
			q, _ := bits.Div64(h, l, nl)
			y = isqrt(q)
		} else {
			y = cosBig(ad, na, nb)
		}
	} else {
		y = cosBig(ad, na, nb)
	}
	k := int64((y + 1) / 2)
	if neg {
		k = -k
	}
	return k
}

// cosBig is ⌊√⌊4·10¹²·ad²/(na·nb)⌋⌋ in arbitrary precision, for the
// products that do not fit 64 bits (large phrases). It is at most 2·10⁶
// when ad² ≤ na·nb.
func cosBig(ad, na, nb uint64) uint64 {
	var num, den big.Int
	num.SetUint64(ad)
	num.Mul(&num, &num)
	num.Mul(&num, big.NewInt(4*CosineUnit*CosineUnit))
	den.SetUint64(na)
	den.Mul(&den, new(big.Int).SetUint64(nb))
	num.Quo(&num, &den)
	num.Sqrt(&num)
	if !num.IsUint64() {
		return math.MaxUint64 - 1
	}
	return num.Uint64()
}

// isqrt is ⌊√q⌋. The float estimate is corrected in integers, so the
// result is exact whatever the platform's square root rounds to.
func isqrt(q uint64) uint64 {
	r := uint64(math.Sqrt(float64(q)))
	if r > 1<<32-1 {
		r = 1<<32 - 1
	}
	for r*r > q {
		r--
	}
	for r < 1<<32-1 && (r+1)*(r+1) <= q {
		r++
	}
	return r
}
