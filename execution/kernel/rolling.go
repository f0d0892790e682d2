package kernel

import (
	"fmt"
	"math"
)

// sqrt252 annualises a daily standard deviation (252 trading days a year).
var sqrt252 = math.Sqrt(252)

// rollChunk is how many windows rolling computes at a time: their means
// and standard deviations stay in the cache, and off the heap.
const rollChunk = 512

// windowStats sets mean[e] and (when std is not nil) std[e] to the mean and
// the sample standard deviation of v[e : e+w], for every e < len(mean);
// len(v) = len(mean)+w−1. Flat windows are left to the caller. w ≥ 1 (w ≥
// 2 for the standard deviation).
func windowStats(v []float64, w int, mean, std []float64) {
	windowMeans(v, w, mean)
	if std != nil {
		windowStd(v, w, mean, std)
	}
}

// rollKind names what rolling writes on a row from its window's mean m and
// standard deviation s.
type rollKind int

const (
	rollMean  rollKind = iota // m; window up to and including t, valid rows only
	rollStd                   // s; the same window
	rollWzs                   // (x_t − m)/s; window strictly before t; NA where x_t is NA or s = 0
	rollVnorm                 // x_t/(s·√252); the same
	rollVol                   // s·√252, on every row, NA or not
)

// rolling computes a windowed statistic of x: every row t gets its value
// from the window of the last w valid values strictly before t (rollWzs,
// rollVnorm, rollVol) or up to and including t (rollMean, rollStd, valid
// rows only), when there are w of them; NA elsewhere. A window whose values
// are all equal has mean its value and standard deviation exactly 0, as in
// meanStd. w ≥ 1 (w ≥ 2 but for rollMean).
//
// Let vals be the valid values of x, in order; window e covers
// vals[e : e+w]. The windows are computed rollChunk at a time from buf, which
// holds the valid values the chunk needs, so neither vals nor the windows'
// statistics are ever held whole.
func rolling(x []float64, w int, kind rollKind) []float64 {
	out := make([]float64, len(x))
	rollingInto(out, x, w, kind)
	return out
}

// rollingInto is rolling writing into out (as long as x), every row once.
func rollingInto(out, x []float64, w int, kind rollKind) {
	r := rows{x: x, out: out[:len(x)], w: w}
	if w >= 1 && len(x) >= w {
		var meanBuf, stdBuf [rollChunk]float64
		var small [2 * rollChunk]float64
		buf := small[:0]
		if need := min(len(x), rollChunk+w-1); need <= len(small) {
			buf = small[:need]
		} else {
			buf = make([]float64, need)
		}
		src, have := 0, 0 // buf[:have] is vals[c0 : c0+have]; x[src:] is not read yet
		nv := 0           // the valid values read, c0+have
		prev := nan       // vals[nv−1] (NaN == nothing, before the first)
		// Flat windows: == is transitive on non-NaN floats, so window e
		// equals its first value exactly when the run of equal values
		// ending at its last value, vals[e+w−1], starts at or before e.
		// Runs are rare: eqs[ei:] lists the k (ascending) where vals[k] ==
		// vals[k−1], found as the values are read; lastEq is the last k
		// taken, start the first value of its run.
		var eqSmall [16]int
		eqs, ei := eqSmall[:0], 0
		lastEq, start := -1, 0
		for c0 := 0; ; {
			var got, read int
			got, read, prev, eqs = readValid(buf[have:], x[src:], prev, nv, eqs)
			have, src, nv = have+got, src+read, nv+got
			if have < w {
				break
			}
			nw := min(rollChunk, have-w+1) // windows c0 … c1−1
			c1 := c0 + nw
			mean, std := meanBuf[:nw], []float64(nil)
			if kind != rollMean {
				std = stdBuf[:nw]
			}
			windowStats(buf[:nw+w-1], w, mean, std)
			for ; ei < len(eqs) && eqs[ei] < c1+w-1; ei++ {
				k := eqs[ei]
				if lastEq != k-1 { // vals[k−1] starts a run
					start = k - 1
				}
				lastEq = k
				if e := k - w + 1; e >= start && e >= c0 {
					mean[e-c0] = buf[e-c0] // its first value: −0 and +0 are ==
					if std != nil {
						std[e-c0] = 0
					}
				}
			}
			if ei == len(eqs) {
				eqs, ei = eqs[:0], 0
			}
			if w == 1 { // every window of one value is flat
				for e := range mean {
					mean[e] = buf[e]
					if std != nil {
						std[e] = 0
					}
				}
			}
			r.chunk(kind, c0, c1, mean, std)
			copy(buf, buf[nw:have])
			have -= nw
			c0 = c1
		}
	}
	r.finish()
}

// readValid copies the valid values of x into dst until dst is full or x
// is read, and returns how many it copied and how many of x it read. prev
// is the valid value before x's first (NaN if none) and base its index
// among the valid values plus one; the index of every value equal to the
// one before it is appended to eqs. (A function of its own: in rollingInto
// its loop would keep its state on the stack.)
func readValid(dst, x []float64, prev float64, base int, eqs []int) (got, read int, last float64, eqsOut []int) {
	for ; read < len(x) && got < len(dst); read++ {
		v := x[read]
		if isNA(v) {
			continue
		}
		if v == prev {
			eqs = append(eqs, base+got)
		}
		dst[got] = v
		got++
		prev = v
	}
	return got, read, prev, eqs
}

// rows walks the rows of x for rolling, chunk by chunk of windows, and
// writes each row of out once.
type rows struct {
	x, out []float64
	w      int
	t      int // the next row
	before int // the valid values of x strictly before row t
}

// chunk writes the rows whose windows are c0 … c1−1 (and the rows without a
// window before them), given the windows' means and standard deviations.
func (r *rows) chunk(kind rollKind, c0, c1 int, mean, std []float64) {
	x, out, w := r.x, r.out, r.w
	t, before := r.t, r.before
	defer func() { r.t, r.before = t, before }()
	if kind == rollMean || kind == rollStd {
		// The window of the last w valid values up to and including t,
		// on valid rows only.
		stat := mean
		if kind == rollStd {
			stat = std
		}
		for ; t < len(x); t++ {
			if isNA(x[t]) {
				out[t] = nan
				continue
			}
			e := before + 1 - w
			if e >= c1 {
				return
			}
			before++
			if e < 0 {
				out[t] = nan
				continue
			}
			out[t] = stat[e-c0]
		}
		return
	}
	// The window of the last w valid values strictly before t, on every
	// row: i, the window of row t within the chunk, moves on past every
	// valid row.
	i, nw := before-w-c0, c1-c0
	switch kind {
	case rollWzs:
		for ; t < len(x) && i < nw; t++ {
			v := x[t]
			z := nan
			if i >= 0 {
				if s := std[i]; !isNA(v) && s != 0 {
					z = (v - mean[i]) / s
				}
			}
			out[t] = z
			if !isNA(v) {
				i++
			}
		}
	case rollVnorm:
		for ; t < len(x) && i < nw; t++ {
			v := x[t]
			z := nan
			if i >= 0 {
				if s := std[i]; !isNA(v) && s != 0 {
					z = v / (s * sqrt252)
				}
			}
			out[t] = z
			if !isNA(v) {
				i++
			}
		}
	default: // rollVol
		for ; t < len(x) && i < nw; t++ {
			v := x[t]
			z := nan
			if i >= 0 {
				z = std[i] * sqrt252
			}
			out[t] = z
			if !isNA(v) {
				i++
			}
		}
	}
	before = i + w + c0
}

// finish writes NA on the rows no window reached.
func (r *rows) finish() {
	for t := r.t; t < len(r.out); t++ {
		r.out[t] = nan
	}
	r.t = len(r.out)
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
	return rolling(x, w, rollMean), nil
}

// Rstd returns the sample standard deviation of the last w valid values up
// to and including t; NA until w are available and where x_t is NA. w ≥ 2.
func Rstd(x []float64, w int) ([]float64, error) {
	if err := checkWindow("rstd", w, 2); err != nil {
		return nil, err
	}
	return rolling(x, w, rollStd), nil
}

// Wzs returns the z-score (x_t − m)/s, m and s the mean and sample standard
// deviation of the last w valid values strictly before t; NA until w such
// values exist, where x_t is NA and where s = 0. w ≥ 2.
func Wzs(x []float64, w int) ([]float64, error) {
	if err := checkWindow("wzs", w, 2); err != nil {
		return nil, err
	}
	return rolling(x, w, rollWzs), nil
}

// Vnorm returns x_t/(s·√252), s the sample standard deviation of the last w
// valid values strictly before t; NA until w exist, where x_t is NA and
// where s = 0. w ≥ 2.
func Vnorm(x []float64, w int) ([]float64, error) {
	if err := checkWindow("vnorm", w, 2); err != nil {
		return nil, err
	}
	return rolling(x, w, rollVnorm), nil
}

// trailingVol returns σ̂_t: the sample standard deviation of the last w
// valid values of r strictly before t, × √252; NA until w exist. Unlike
// Vnorm it is defined on rows where r_t itself is NA.
func trailingVol(r []float64, w int) []float64 {
	return rolling(r, w, rollVol)
}
