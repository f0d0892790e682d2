package kernel

import "math"

// Exposure is what a check of a family's output reads off its weights,
// asset after asset, starting from the zero Exposure: the largest
// |weight|, the total movement Σ|w_t − w_{t−1}| (NA weights as 0, the
// weight before row 0 as 0; summed in row order, asset after asset), and
// how many weights are defined and finite.
type Exposure struct {
	MaxAbs  float64
	Moved   float64
	Defined int
	Finite  int
}

// Add reads one asset's weights w into e and adds |w_t| to gross[t] (NA
// as 0) for every row; gross is at least as long as w and holds sums of
// magnitudes (never −0).
func (e *Exposure) Add(w, gross []float64) {
	if len(w) == 0 {
		return
	}
	gross = gross[:len(w)]
	prev := 0.0
	for t := range w[:1] {
		prev = e.add(w[t], prev, &gross[t])
	}
	t := exposureVec(w, gross, e)
	if t > 1 {
		prev = w[t-1]
		if isNA(prev) {
			prev = 0
		}
	}
	for ; t < len(w); t++ {
		prev = e.add(w[t], prev, &gross[t])
	}
}

// add reads the weight v, after the weight prev (NA as 0), and returns v
// as the next row's prev. An NA weight adds 0 to gross and to MaxAbs's
// maximum, as the vector loop does: neither changes a sum of magnitudes
// or a maximum of them from the zero Exposure.
func (e *Exposure) add(v, prev float64, gross *float64) float64 {
	z := v
	if isNA(v) {
		z = 0
	} else {
		e.Defined++
		if !math.IsInf(v, 0) {
			e.Finite++
		}
	}
	a := math.Abs(z)
	*gross += a
	e.MaxAbs = max(e.MaxAbs, a)
	e.Moved += math.Abs(z - prev)
	return z
}

// Range returns the smallest and the largest defined value of the series,
// taken in order (NaN, NaN when none is): lo and hi start at the first
// defined value and move only to a strictly smaller or larger one, so that
// of −0 and +0 the first met is kept.
func Range(series ...[]float64) (lo, hi float64) {
	// Without a zero at either end, the first met of equal values has the
	// same bits as any other: the order does not matter.
	lohi := [2]float64{math.Inf(1), math.Inf(-1)}
	for _, x := range series {
		for _, v := range x[rangeVec(x, &lohi):] {
			if v < lohi[0] {
				lohi[0] = v
			}
			if v > lohi[1] {
				lohi[1] = v
			}
		}
	}
	switch lo, hi := lohi[0], lohi[1]; {
	case lo > hi:
		return nan, nan
	case lo != 0 && hi != 0:
		return lo, hi
	}
	return rangeInOrder(series)
}

// rangeInOrder is Range one value after the other.
func rangeInOrder(series [][]float64) (lo, hi float64) {
	lo, hi = nan, nan
	started := false
	for _, x := range series {
		for _, v := range x {
			switch {
			case isNA(v):
			case !started:
				lo, hi, started = v, v, true
			case v < lo:
				lo = v
			case v > hi:
				hi = v
			}
		}
	}
	return lo, hi
}
