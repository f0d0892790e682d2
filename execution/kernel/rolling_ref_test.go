package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The rolling statistics as they were first written (one window at a
// time, through windows and meanStd), kept as the reference the batched
// implementation in rolling.go must match bit for bit.

// windows calls f(t, win) for every row t that has at least w valid values
// of x strictly before it (strict) or up to and including it (!strict); win
// is the last w of them, oldest first. win aliases internal storage and is
// only valid during the call.
func refWindows(x []float64, w int, strict bool, f func(t int, win []float64)) {
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

func refRmean(x []float64, w int) []float64 {
	out := nas(len(x))
	refWindows(x, w, false, func(t int, win []float64) { out[t] = mean(win) })
	return out
}

func refRstd(x []float64, w int) []float64 {
	out := nas(len(x))
	refWindows(x, w, false, func(t int, win []float64) { _, out[t] = meanStd(win) })
	return out
}

func refWzs(x []float64, w int) []float64 {
	out := nas(len(x))
	refWindows(x, w, true, func(t int, win []float64) {
		if isNA(x[t]) {
			return
		}
		if m, s := meanStd(win); s != 0 {
			out[t] = (x[t] - m) / s
		}
	})
	return out
}

func refVnorm(x []float64, w int) []float64 {
	out := nas(len(x))
	refWindows(x, w, true, func(t int, win []float64) {
		if isNA(x[t]) {
			return
		}
		if _, s := meanStd(win); s != 0 {
			out[t] = x[t] / (s * sqrt252)
		}
	})
	return out
}

func refTrailingVol(r []float64, w int) []float64 {
	out := nas(len(r))
	refWindows(r, w, true, func(t int, win []float64) {
		_, s := meanStd(win)
		out[t] = s * sqrt252
	})
	return out
}

// TestRollingMatchesReference: the batched rolling statistics give bit for
// bit what the one-window-at-a-time reference gives, on every real series
// and on random series full of NA rows, flat stretches, zeros of both
// signs and repeated values, for windows from 1 to longer than the data.
func TestRollingMatchesReference(t *testing.T) {
	var series [][]float64
	for _, name := range []string{"wti-daily.csv", "ffn-test-data.csv", "crude-oil-wti-cushing.csv", "natural-gas-daily.csv", "vix-daily.csv"} {
		f := loadReal(t, name)
		for j := range f.Width() {
			col := f.Column(j)
			r := Dlog(col)
			series = append(series, col, r, Cs0(r))
		}
	}
	rng := rand.New(rand.NewPCG(7, 9))
	for range 40 {
		n := 1 + rng.IntN(300)
		x := make([]float64, n)
		v := rng.NormFloat64()
		for i := range x {
			switch rng.IntN(10) {
			case 0:
				x[i] = NA
			case 1, 2, 3:
				x[i] = v // a flat stretch
			case 4:
				x[i] = math.Copysign(0, float64(rng.IntN(2)*2-1))
			default:
				v = math.Round(rng.NormFloat64()*4) / 4 // few distinct values
				x[i] = v
			}
		}
		series = append(series, x)
	}
	windows := []int{1, 2, 3, 4, 5, 7, 20, 60, 61, 250, 1000}
	n := 0
	for si, x := range series {
		for _, w := range windows {
			check := func(op string, got []float64, err error, want []float64) {
				t.Helper()
				if err != nil {
					t.Fatalf("series %d %s %d: %v", si, op, w, err)
				}
				if i, ok := bitsEqual(got, want); !ok {
					t.Fatalf("series %d %s %d: row %d: %v, reference %v", si, op, w, i, got[i], want[i])
				}
				n++
			}
			got, err := Rmean(x, w)
			check("rmean", got, err, refRmean(x, w))
			if w < 2 {
				continue
			}
			got, err = Rstd(x, w)
			check("rstd", got, err, refRstd(x, w))
			got, err = Wzs(x, w)
			check("wzs", got, err, refWzs(x, w))
			got, err = Vnorm(x, w)
			check("vnorm", got, err, refVnorm(x, w))
			got, err = TrailingVol(x, w)
			check("trailing vol", got, err, refTrailingVol(x, w))
		}
	}
	t.Logf("%d series × windows compared bit for bit", n)
}

func bitsEqual(a, b []float64) (int, bool) {
	if len(a) != len(b) {
		return 0, false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i, false
		}
	}
	return 0, true
}
