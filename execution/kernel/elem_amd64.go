//go:build !purego

package kernel

import "math"

//go:noescape
func scoresAVX(next, mean, std *float64, k float64, quads int, out *float64)

//go:noescape
func clipAVX(x *float64, quads int, lo, hi float64, out *float64)

//go:noescape
func sizeAVX(sig, vol *float64, quads int, tau, lo, hi float64, w *float64)

//go:noescape
func pnlAddAVX(w, r *float64, quads int, sum, count *float64)

// The ...Vec functions do the leading whole quads of their loop with AVX
// and return how many values they did; the Go loops do the rest.

// scoresVec: out = (next − mean)/(std·k), NA where std = 0; mean nil is
// +0 throughout.
func scoresVec(next, mean, std []float64, k float64, out []float64) int {
	q := len(out) / 4
	if !haveAVX || q == 0 {
		return 0
	}
	_, _ = next[4*q-1], std[4*q-1]
	var m *float64
	if mean != nil {
		_ = mean[4*q-1]
		m = &mean[0]
	}
	scoresAVX(&next[0], m, &std[0], k, q, &out[0])
	return 4 * q
}

func clipVec(x []float64, lo, hi float64, out []float64) int {
	q := len(x) / 4
	if !haveAVX || q == 0 {
		return 0
	}
	_ = out[4*q-1]
	clipAVX(&x[0], q, lo, hi, &out[0])
	return 4 * q
}

func sizeVec(sig, vol []float64, tau, lo, hi float64, w []float64) int {
	q := len(w) / 4
	if !haveAVX || q == 0 {
		return 0
	}
	_, _ = sig[4*q-1], vol[4*q-1]
	sizeAVX(&sig[0], &vol[0], q, tau, lo, hi, &w[0])
	return 4 * q
}

func pnlAddVec(w, r, sum, count []float64) int {
	q := len(w) / 4
	if !haveAVX || q == 0 {
		return 0
	}
	_, _, _ = r[4*q-1], sum[4*q-1], count[4*q-1]
	pnlAddAVX(&w[0], &r[0], q, &sum[0], &count[0])
	return 4 * q
}

//go:noescape
func firstRepeatAVX(v *float64, quads int) int

// firstRepeatVec looks for an i ≥ 1 with v[i] == v[i−1] in the leading
// whole quads of v[1:]: the first such i, or 0 and up to where it looked.
func firstRepeatVec(v []float64) (at, looked int) {
	q := (len(v) - 1) / 4
	if !haveAVX || q <= 0 {
		return 0, 1
	}
	return firstRepeatAVX(&v[0], q), 4*q + 1
}

//go:noescape
func exposureAVX(w *float64, quads int, gross *float64, e *Exposure)

// exposureVec does rows 1 … 4·q of Exposure.Add with AVX2 and returns the
// next row.
func exposureVec(w, gross []float64, e *Exposure) int {
	q := (len(w) - 1) / 4
	if !haveAVX2 || q <= 0 {
		return 1
	}
	_ = gross[4*q]
	exposureAVX(&w[0], q, &gross[0], e)
	return 4*q + 1
}

//go:noescape
func rangeAVX(x *float64, quads int, lohi *[2]float64)

// rangeVec folds the defined values of the leading whole quads of x into
// lohi (min, max) and returns how many values it read.
func rangeVec(x []float64, lohi *[2]float64) int {
	q := len(x) / 4
	if !haveAVX || q == 0 {
		return 0
	}
	rangeAVX(&x[0], q, lohi)
	return 4 * q
}

//go:noescape
func naRowsAVX(x *float64, quads int, rows *int, room int) (found, looked int)

// naRowsVec appends the NA rows of the leading whole quads of x (rows
// numbered from base) to rows while its capacity lasts (four at a time),
// and returns them and how many values it read.
func naRowsVec(x []float64, base int, rows []int) ([]int, int) {
	q, n := len(x)/4, len(rows)
	room := cap(rows) - n
	if !haveAVX || q == 0 || room < 4 {
		return rows, 0
	}
	found, looked := naRowsAVX(&x[0], q, &rows[n:cap(rows)][0], room)
	rows = rows[:n+found]
	for i := n; i < len(rows); i++ {
		rows[i] += base
	}
	return rows, looked
}

//go:noescape
func dlogDiffAVX(x *float64, quads int, l *float64) (inf int)

// dlogVec is dlogInto with AVX2, for a series without +Inf: it returns
// false, having written out but nothing else, where it does not run.
func dlogVec(out, x []float64) bool {
	n := len(x)
	q := (n - 1) / 4 // rows 1 … 4q four at a time
	if !haveAVX2 || q == 0 {
		return false
	}
	// ln x, bit for bit math.Log's where x is positive and finite; the
	// other lanes are masked below.
	for i := logsVec(x, out); i < n; i++ {
		out[i] = math.Log(x[i])
	}
	if dlogDiffAVX(&x[0], q, &out[0]) != 0 {
		return false
	}
	dlogFinish(out, x, 4*q+1)
	return true
}
