package kernel

import (
	"fmt"
	"math"
	"slices"
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
func windowStats(v []float64, w int, mean, std, scratch []float64) {
	e := windowStatsVec(v, w, mean, std, scratch)
	if e == len(mean) {
		return
	}
	windowMeans(v[e:], w, mean[e:])
	if std != nil {
		windowStd(v[e:], w, mean[e:], std[e:])
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
		var small [2*rollChunk + 1]float64
		var scratchSmall [vecScratchSmall]float64
		// buf holds the values the chunk's windows cover and the one
		// after the last (the row a strictly-before window scores).
		buf := small[:0]
		if need := min(len(x), rollChunk+w); need <= len(small) {
			buf = small[:need]
		} else {
			buf = make([]float64, need)
		}
		scratch := scratchSmall[:]
		if n := vecScratch(w); n > len(scratch) {
			scratch = make([]float64, n)
		}
		have := 0 // buf[:have] is vals[c0 : c0+have]
		var eqSmall [16]int
		var naSmall [256]int
		in := valid{x: x, prev: nan, eqs: eqSmall[:0], nas: naRows(x, naSmall[:0])}
		// Flat windows: == is transitive on non-NaN floats, so window e
		// equals its first value exactly when the run of equal values
		// ending at its last value, vals[e+w−1], starts at or before e.
		// Runs are rare: in.eqs[ei:] lists the k (ascending) where vals[k]
		// == vals[k−1], found as the values are read; lastEq is the last k
		// taken, start the first value of its run.
		ei := 0
		lastEq, start := -1, 0
		for c0 := 0; ; {
			var got int
			in, got = in.read(buf[have:])
			have += got
			if have < w {
				break
			}
			eqs := in.eqs
			nw := min(rollChunk, have-w+1) // windows c0 … c1−1
			c1 := c0 + nw
			mean, std := meanBuf[:nw], []float64(nil)
			if kind != rollMean {
				std = stdBuf[:nw]
			}
			windowStats(buf[:nw+w-1], w, mean, std, scratch)
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
				in.eqs, ei = eqs[:0], 0
			}
			if w == 1 { // every window of one value is flat
				for e := range mean {
					mean[e] = buf[e]
					if std != nil {
						std[e] = 0
					}
				}
			}
			r.chunk(kind, c0, windowValues(kind, buf[w:have], mean, std), in.src, in.nas)
			copy(buf, buf[nw:have])
			have -= nw
			c0 = c1
		}
	}
	r.finish()
}

// windowValues turns the windows' means and standard deviations into
// what rolling writes for each window, in place (in mean or std), and
// returns it. next[e] is the valid value right after window e, where
// there is one: what a strictly-before window scores.
func windowValues(kind rollKind, next, mean, std []float64) []float64 {
	switch kind {
	case rollMean:
		return mean
	case rollStd:
		return std
	case rollVol:
		for e, s := range std {
			std[e] = s * sqrt252
		}
		return std
	}
	// Wzs and Vnorm: a window without a value after it scores no row.
	n := min(len(mean), len(next))
	mean, std, next = mean[:n], std[:n], next[:n]
	if kind == rollWzs {
		for e := scoresVec(next, mean, std, 1, mean); e < n; e++ {
			s := std[e]
			z := (next[e] - mean[e]) / s
			if s == 0 {
				z = nan
			}
			mean[e] = z
		}
	} else {
		for e := scoresVec(next, nil, std, sqrt252, mean); e < n; e++ {
			s := std[e]
			z := next[e] / (s * sqrt252)
			if s == 0 {
				z = nan
			}
			mean[e] = z
		}
	}
	return mean
}

// valid reads the valid values of x, vals, in order, noting the values
// equal to the one before them. It is given the NA rows of x: it copies
// the runs of valid values between them.
type valid struct {
	x    []float64
	nas  []int   // the NA rows of x, ascending
	ni   int     // nas[ni:] are the NA rows from src on
	src  int     // x[src:] is not read yet
	n    int     // the valid values read
	prev float64 // vals[n−1] (NaN before the first)
	eqs  []int   // the k where vals[k] == vals[k−1], ascending
}

// read copies the next valid values into dst until dst is full or x is
// read, and returns how many it copied and v read on. (A value receiver:
// appending to eqs through a pointer would move its stack array to the
// heap.)
func (v valid) read(dst []float64) (valid, int) {
	got := 0
	for got < len(dst) && v.src < len(v.x) {
		end := len(v.x) // x[src:end] is valid
		if v.ni < len(v.nas) {
			end = v.nas[v.ni]
		}
		if v.src == end {
			v.src++
			v.ni++
			continue
		}
		k := min(end-v.src, len(dst)-got)
		seg := dst[got : got+k]
		copy(seg, v.x[v.src:v.src+k])
		if seg[0] == v.prev {
			v.eqs = append(v.eqs, v.n+got)
		}
		for i := 1; i < k; i++ {
			if i += firstRepeat(seg[i-1:]) - 1; i < k {
				v.eqs = append(v.eqs, v.n+got+i)
			}
		}
		v.prev = seg[k-1]
		got += k
		v.src += k
	}
	v.n += got
	return v, got
}

// naRows appends the rows of x that are NA to rows, in order.
func naRows(x []float64, rows []int) []int {
	from := 0
	for {
		if cap(rows)-len(rows) < 4 {
			rows = slices.Grow(rows, max(16, len(rows)))
		}
		var looked int
		rows, looked = naRowsVec(x[from:], from, rows)
		from += looked
		if looked == 0 { // the whole quads are read, or there is no vector loop
			break
		}
	}
	for ; from < len(x); from++ {
		if isNA(x[from]) {
			rows = append(rows, from)
		}
	}
	return rows
}

// firstRepeat is the first i ≥ 1 with v[i] == v[i−1], or len(v) (at least
// 1).
func firstRepeat(v []float64) int {
	at, i := firstRepeatVec(v)
	if at > 0 {
		return at
	}
	for ; i < len(v); i++ {
		if v[i] == v[i-1] {
			return i
		}
	}
	return max(len(v), 1)
}

// rows walks the rows of x for rolling, chunk by chunk of windows, and
// writes each row of out once.
type rows struct {
	x, out []float64
	w      int
	t      int // the next row
	before int // the valid values of x strictly before row t
	ni     int // nas[ni:] are the NA rows from t on
}

// chunk writes the rows whose windows are c0 … c0+len(o)−1 (and the rows
// without a window before them), o[i] being what window c0+i writes, up to
// row read at most (x[:read] has been read); nas lists the NA rows of x. A
// valid row's window is that of the last w valid values up to and
// including it (rollMean, rollStd) or strictly before it; an NA row gets
// NA, but for rollVol, which writes its window's value on every row. Runs
// of valid rows take consecutive windows: they are copied.
func (r *rows) chunk(kind rollKind, c0 int, o []float64, read int, nas []int) {
	x, out := r.x[:read], r.out[:read]
	t, ni, shift := r.t, r.ni, r.w
	if kind == rollMean || kind == rollStd {
		shift--
	}
	i := r.before - shift - c0 // the window of row t, within the chunk
	for t < len(x) && i < len(o) {
		end := len(x) // rows t … end−1 are valid
		if ni < len(nas) {
			end = nas[ni]
		}
		if t == end {
			v := nan
			if kind == rollVol && i >= 0 {
				v = o[i]
			}
			out[t] = v
			t++
			ni++
			continue
		}
		n := end - t
		if i < 0 { // rows before the first window
			n = min(n, -i)
			for k := range out[t : t+n] {
				out[t+k] = nan
			}
		} else {
			n = min(n, len(o)-i)
			copy(out[t:t+n], o[i:i+n])
		}
		t += n
		i += n
	}
	r.t, r.ni, r.before = t, ni, i+shift+c0
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
