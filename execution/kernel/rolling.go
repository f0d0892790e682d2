package kernel

import (
	"fmt"
	"math"
)

// sqrt252 annualises a daily standard deviation (252 trading days a year).
var sqrt252 = math.Sqrt(252)

// windows calls f(t, win) for every row t that has at least w valid values
// of x strictly before it (strict) or up to and including it (!strict); win
// is the last w of them, oldest first. win aliases internal storage and is
// only valid during the call.
func windows(x []float64, w int, strict bool, f func(t int, win []float64)) {
	vals := make([]float64, 0, len(x))
	for t, v := range x {
		if strict && len(vals) >= w {
			f(t, vals[len(vals)-w:])
		}
		if !isNA(v) {
			vals = append(vals, v)
		}
		if !strict && !isNA(v) && len(vals) >= w {
			f(t, vals[len(vals)-w:])
		}
	}
}

// allEqual reports whether every value of v is v[0].
func allEqual(v []float64) bool {
	for _, x := range v[1:] {
		if x != v[0] {
			return false
		}
	}
	return true
}

// mean is the left-to-right sum over n; exactly v[0] when all values are
// equal. len(v) ≥ 1.
func mean(v []float64) float64 {
	if allEqual(v) {
		return v[0]
	}
	return plainMean(v)
}

func plainMean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// meanStd returns the mean and the sample standard deviation (n − 1) of v,
// two-pass; exactly (v[0], 0) when all values are equal. len(v) ≥ 2.
func meanStd(v []float64) (m, s float64) {
	if allEqual(v) {
		return v[0], 0
	}
	m = plainMean(v)
	var ss float64
	for _, x := range v {
		d := x - m
		ss += float64(d * d) // explicit conversion: no FMA (see the package comment)
	}
	return m, math.Sqrt(ss / float64(len(v)-1))
}

func checkWindow(op string, w, min int) error {
	if w < min {
		return fmt.Errorf("kernel: %s %d: %w: the window must be ≥ %d", op, w, ErrParam, min)
	}
	return nil
}

// Rmean returns the mean of the last w valid values up to and including t;
// NA until w are available and where x_t is NA. w ≥ 1.
func Rmean(x []float64, w int) ([]float64, error) {
	if err := checkWindow("rmean", w, 1); err != nil {
		return nil, err
	}
	out := nas(len(x))
	windows(x, w, false, func(t int, win []float64) { out[t] = mean(win) })
	return out, nil
}

// Rstd returns the sample standard deviation of the last w valid values up
// to and including t; NA until w are available and where x_t is NA. w ≥ 2.
func Rstd(x []float64, w int) ([]float64, error) {
	if err := checkWindow("rstd", w, 2); err != nil {
		return nil, err
	}
	out := nas(len(x))
	windows(x, w, false, func(t int, win []float64) { _, out[t] = meanStd(win) })
	return out, nil
}

// Wzs returns the z-score (x_t − m)/s, m and s the mean and sample standard
// deviation of the last w valid values strictly before t; NA until w such
// values exist, where x_t is NA and where s = 0. w ≥ 2.
func Wzs(x []float64, w int) ([]float64, error) {
	if err := checkWindow("wzs", w, 2); err != nil {
		return nil, err
	}
	out := nas(len(x))
	windows(x, w, true, func(t int, win []float64) {
		if isNA(x[t]) {
			return
		}
		if m, s := meanStd(win); s != 0 {
			out[t] = (x[t] - m) / s
		}
	})
	return out, nil
}

// Vnorm returns x_t/(s·√252), s the sample standard deviation of the last w
// valid values strictly before t; NA until w exist, where x_t is NA and
// where s = 0. w ≥ 2.
func Vnorm(x []float64, w int) ([]float64, error) {
	if err := checkWindow("vnorm", w, 2); err != nil {
		return nil, err
	}
	out := nas(len(x))
	windows(x, w, true, func(t int, win []float64) {
		if isNA(x[t]) {
			return
		}
		if _, s := meanStd(win); s != 0 {
			out[t] = x[t] / (s * sqrt252)
		}
	})
	return out, nil
}

// trailingVol returns σ̂_t: the sample standard deviation of the last w
// valid values of r strictly before t, × √252; NA until w exist. Unlike
// Vnorm it is defined on rows where r_t itself is NA.
func trailingVol(r []float64, w int) []float64 {
	out := nas(len(r))
	windows(r, w, true, func(t int, win []float64) {
		_, s := meanStd(win)
		out[t] = s * sqrt252
	})
	return out
}
