package kernel

import (
	"fmt"
	"math"
)

// sqrt252 annualises a daily standard deviation (252 trading days a year).
var sqrt252 = math.Sqrt(252)

// windowStats returns the mean and (when wantStd) the sample standard
// deviation of every run of w consecutive values of v: element e covers
// v[e : e+w]. Each window is summed on its own, left to right, exactly as
// mean and meanStd sum it — the result is bit for bit theirs — but four
// consecutive windows are summed in the same loop, so that four
// independent additions are in flight instead of one chain waiting on
// itself. A window whose values are all equal gets (v[e], 0), as in
// meanStd. w ≥ 1 (w ≥ 2 for the standard deviation).
func windowStats(v []float64, w int, wantStd bool) (mean, std []float64) {
	n := len(v) - w + 1
	if n <= 0 || w < 1 {
		return nil, nil
	}
	mean = make([]float64, n)
	if wantStd {
		std = make([]float64, n)
	}
	fw, fw1 := float64(w), float64(w-1)
	e := 0
	for ; e+4 <= n; e += 4 {
		a := v[e : e+w]
		b, c, d := v[e+1:e+1+w], v[e+2:e+2+w], v[e+3:e+3+w]
		b, c, d = b[:len(a)], c[:len(a)], d[:len(a)] // bounds-check hints
		var s0, s1, s2, s3 float64
		for i := range a {
			s0 += a[i]
			s1 += b[i]
			s2 += c[i]
			s3 += d[i]
		}
		m0, m1, m2, m3 := s0/fw, s1/fw, s2/fw, s3/fw
		mean[e], mean[e+1], mean[e+2], mean[e+3] = m0, m1, m2, m3
		if !wantStd {
			continue
		}
		var q0, q1, q2, q3 float64
		for i := range a {
			d0, d1, d2, d3 := a[i]-m0, b[i]-m1, c[i]-m2, d[i]-m3
			q0 += float64(d0 * d0) // explicit conversions: no FMA
			q1 += float64(d1 * d1)
			q2 += float64(d2 * d2)
			q3 += float64(d3 * d3)
		}
		std[e], std[e+1], std[e+2], std[e+3] = math.Sqrt(q0/fw1), math.Sqrt(q1/fw1), math.Sqrt(q2/fw1), math.Sqrt(q3/fw1)
	}
	for ; e < n; e++ {
		win := v[e : e+w]
		m := plainMean(win)
		mean[e] = m
		if wantStd {
			var q float64
			for _, x := range win {
				d := x - m
				q += float64(d * d) // explicit conversion: no FMA
			}
			std[e] = math.Sqrt(q / fw1)
		}
	}
	// Flat windows: run counts how many values up to k equal v[k] (== is
	// transitive on non-NaN floats, so the whole window equals its first
	// value exactly when the run ending at its last value is ≥ w).
	run := 0
	for k := range v {
		if k > 0 && v[k] == v[k-1] {
			run++
		} else {
			run = 1
		}
		if k >= w-1 && run >= w {
			e := k - w + 1
			mean[e] = v[e]
			if wantStd {
				std[e] = 0
			}
		}
	}
	return mean, std
}

// compact returns the valid values of x, in order, and for every row t the
// number of valid values strictly before t (before[t]).
func compact(x []float64) (vals []float64, before []int) {
	vals = make([]float64, 0, len(x))
	before = make([]int, len(x))
	for t, v := range x {
		before[t] = len(vals)
		if !isNA(v) {
			vals = append(vals, v)
		}
	}
	return vals, before
}

// rolling computes the windowed statistics of x: for every row t it calls
// f(t, k) with k the index into mean and std of the window of the last w
// valid values strictly before t (strict) or up to and including t
// (!strict, valid rows only), when there are w of them.
func rolling(x []float64, w int, strict, wantStd bool, f func(t int, mean, std []float64, k int)) {
	vals, before := compact(x)
	mean, std := windowStats(vals, w, wantStd)
	for t := range x {
		k := before[t] // valid values strictly before t
		if !strict {
			if isNA(x[t]) {
				continue
			}
			k++ // … and t itself
		}
		if k >= w {
			f(t, mean, std, k-w)
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
	rolling(x, w, false, false, func(t int, mean, _ []float64, k int) { out[t] = mean[k] })
	return out, nil
}

// Rstd returns the sample standard deviation of the last w valid values up
// to and including t; NA until w are available and where x_t is NA. w ≥ 2.
func Rstd(x []float64, w int) ([]float64, error) {
	if err := checkWindow("rstd", w, 2); err != nil {
		return nil, err
	}
	out := nas(len(x))
	rolling(x, w, false, true, func(t int, _, std []float64, k int) { out[t] = std[k] })
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
	rolling(x, w, true, true, func(t int, mean, std []float64, k int) {
		if isNA(x[t]) {
			return
		}
		if s := std[k]; s != 0 {
			out[t] = (x[t] - mean[k]) / s
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
	rolling(x, w, true, true, func(t int, _, std []float64, k int) {
		if isNA(x[t]) {
			return
		}
		if s := std[k]; s != 0 {
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
	rolling(r, w, true, true, func(t int, _, std []float64, k int) {
		out[t] = std[k] * sqrt252
	})
	return out
}
