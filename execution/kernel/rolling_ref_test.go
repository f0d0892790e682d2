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
	t.Parallel()
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
	for i := range 50 {
		n := 1 + rng.IntN(300)
		if i >= 40 { // several chunks of windows (rollChunk)
			n = 900 + rng.IntN(1500)
		}
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
	for si, all := range series {
		for _, w := range windows {
			x := all
			if w >= 250 && len(x) > 4000 {
				// The one-window-at-a-time reference costs rows × w: the
				// long windows see the first 4,000 rows of a real series
				// (still several chunks of windows, rollChunk).
				x = x[:4000]
			}
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

// TestWindowLoopsMatchOneAtATime: the batched window loops (AVX where the
// processor has it, then the Go loops) give bit for bit the one-window,
// left-to-right means and standard deviations of meanStd, for every block
// size and tail length, on values of every magnitude, both zeros,
// subnormals and infinities; and the Go loops alone do too.
func TestWindowLoopsMatchOneAtATime(t *testing.T) { checkWindowLoops(t) }

// checkWindowLoops is TestWindowLoopsMatchOneAtATime's body: on amd64 it
// also runs with the AVX-512 loops switched off (window_avx2_amd64_test.go),
// as a processor without them runs.
func checkWindowLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	special := []float64{0, math.Copysign(0, -1), 5e-324, -2.2e-308, 1e300, -1e300, 1e-300, math.Inf(1), math.Inf(-1), 3, 3}
	value := func() float64 {
		switch rng.IntN(8) {
		case 0:
			return special[rng.IntN(len(special))]
		case 1:
			return math.Ldexp(rng.NormFloat64(), rng.IntN(200)-100)
		}
		return rng.NormFloat64()
	}
	for trial := range 300 {
		w := 2 + rng.IntN(70)
		if trial%10 == 0 {
			w = 200 + rng.IntN(100)
		}
		n := 1 + rng.IntN(150) // windows: below, at and above the 32-window blocks
		v := make([]float64, n+w-1)
		for i := range v {
			v[i] = value()
		}
		if trial%3 == 0 { // no infinities: the squared deviations stay finite
			for i, x := range v {
				if math.IsInf(x, 0) {
					v[i] = 1
				}
			}
		}
		wantMean, wantStd := make([]float64, n), make([]float64, n)
		for e := range n {
			win := v[e : e+w]
			wantMean[e] = plainMean(win) // meanStd without its flat-window case
			var q float64
			for _, x := range win {
				d := x - wantMean[e]
				q += float64(d * d)
			}
			wantStd[e] = math.Sqrt(q / float64(w-1))
			if !allEqual(win) {
				if m, s := meanStd(win); math.Float64bits(m) != math.Float64bits(wantMean[e]) || math.Float64bits(s) != math.Float64bits(wantStd[e]) {
					t.Fatalf("the test's one-window form is not meanStd's")
				}
			}
		}
		for _, c := range []struct {
			name  string
			means func([]float64, int, []float64)
			std   func([]float64, int, []float64, []float64)
		}{
			{"dispatch", windowMeans, windowStd},
			{"go", windowMeansGo, windowStdGo},
		} {
			got := make([]float64, n)
			c.means(v, w, got)
			if i, ok := bitsEqualNaN(got, wantMean); !ok {
				t.Fatalf("trial %d %s: w %d, %d windows: mean %d = %v, one at a time %v", trial, c.name, w, n, i, got[i], wantMean[i])
			}
			c.std(v, w, wantMean, got)
			if i, ok := bitsEqualNaN(got, wantStd); !ok {
				t.Fatalf("trial %d %s: w %d, %d windows: std %d = %v, one at a time %v", trial, c.name, w, n, i, got[i], wantStd[i])
			}
		}
		// Both at once, as rolling runs them: on amd64 with AVX-512 the
		// leading blocks in windowStatsT, from transposed values. Its
		// standard deviations are around its own means: the same bits.
		gotMean, gotStd := make([]float64, n), make([]float64, n)
		windowStats(v, w, gotMean, gotStd, make([]float64, vecScratch(w)))
		if i, ok := bitsEqualNaN(gotMean, wantMean); !ok {
			t.Fatalf("trial %d windowStats: w %d, %d windows: mean %d = %v, one at a time %v", trial, w, n, i, gotMean[i], wantMean[i])
		}
		if i, ok := bitsEqualNaN(gotStd, wantStd); !ok {
			t.Fatalf("trial %d windowStats: w %d, %d windows: std %d = %v, one at a time %v", trial, w, n, i, gotStd[i], wantStd[i])
		}
		windowStats(v, w, gotMean, nil, make([]float64, vecScratch(w)))
		if i, ok := bitsEqualNaN(gotMean, wantMean); !ok {
			t.Fatalf("trial %d windowStats without std: w %d, %d windows: mean %d = %v, one at a time %v", trial, w, n, i, gotMean[i], wantMean[i])
		}
	}
	t.Logf("AVX: %v, AVX-512 and FMA: %v", haveAVX, haveAVX512)
}

// bitsEqualNaN is bitsEqual with every NaN equal to every NaN (Inf − Inf
// gives NaN; its payload is the processor's, not the code's).
func bitsEqualNaN(a, b []float64) (int, bool) {
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) && !(isNA(a[i]) && isNA(b[i])) {
			return i, false
		}
	}
	return 0, len(a) == len(b)
}

// refDlog is Dlog as first written, two logarithms per row.
func refDlog(x []float64) []float64 {
	out := nas(len(x))
	previousValid(x, func(t, p int) {
		if x[t] > 0 && x[p] > 0 {
			out[t] = math.Log(x[t]) - math.Log(x[p])
		}
	})
	return out
}

// TestDlogMatchesReference: Dlog, which takes each logarithm once, gives
// bit for bit the two-logarithms-per-row form, around NA rows, zeros,
// negative values and infinities.
func TestDlogMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	for trial := range 600 {
		x := make([]float64, rng.IntN(60))
		for i := range x {
			switch rng.IntN(9) {
			case 0:
				x[i] = NA
			case 1:
				x[i] = -rng.Float64()
			case 2:
				x[i] = []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 5e-324, math.MaxFloat64}[rng.IntN(6)]
			default:
				x[i] = math.Exp(rng.NormFloat64() * 5)
			}
			if trial%3 != 0 && x[i] > math.MaxFloat64 { // most trials without +Inf: the vector path
				x[i] = math.MaxFloat64
			}
		}
		if i, ok := bitsEqual(Dlog(x), refDlog(x)); !ok {
			t.Fatalf("trial %d: row %d: %v, reference %v (x = %v)", trial, i, Dlog(x)[i], refDlog(x)[i], x)
		}
	}
	// One +Inf at every row of positive series of every length: the
	// vector loop must give the whole series back to the scalar one.
	for n := range 14 {
		for at := range n {
			x := make([]float64, n)
			for i := range x {
				x[i] = float64(i + 1)
			}
			x[at] = math.Inf(1)
			if i, ok := bitsEqual(Dlog(x), refDlog(x)); !ok {
				t.Fatalf("+Inf at %d of %d: row %d: %v, reference %v", at, n, i, Dlog(x)[i], refDlog(x)[i])
			}
		}
	}
}

// TestLogsMatchMathLog: the batched logarithm is math.Log bit for bit, on
// every binade (subnormals included), around the √2/2 split of the
// mantissa where the reduction changes, at powers of two, and on 0, −0,
// negative values, +Inf, −Inf and NaN, at every offset of a vector.
func TestLogsMatchMathLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 19))
	hs := math.Float64frombits(0x3FE6A09E667F3BCD) // √2/2 as math.Log's assembly rounds it
	var x []float64
	for e := -1074; e <= 1023; e++ {
		p := math.Ldexp(1, e)
		x = append(x, p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1)), p*(1+rng.Float64()))
		if e > -1022 {
			s := math.Ldexp(hs, e+1)
			x = append(x, s, math.Nextafter(s, 0), math.Nextafter(s, math.Inf(1)))
		}
	}
	for range 200000 {
		x = append(x, math.Float64frombits(rng.Uint64()&^(1<<63)), math.Exp(rng.NormFloat64()*3), 1+rng.NormFloat64()*1e-9)
	}
	x = append(x, 0, math.Copysign(0, -1), -1, -5e-324, math.Inf(1), math.Inf(-1), NA, math.MaxFloat64, 5e-324, 1)
	for off := range 5 {
		v := x[off:]
		out := make([]float64, len(v))
		logs(v, out)
		for i, xi := range v {
			if want := math.Log(xi); math.Float64bits(out[i]) != math.Float64bits(want) {
				t.Fatalf("offset %d: ln %v (%#x) = %v (%#x), math.Log %v (%#x)", off, xi, math.Float64bits(xi), out[i], math.Float64bits(out[i]), want, math.Float64bits(want))
			}
		}
	}
	t.Logf("%d values, AVX2: %v", len(x), haveAVX2)
}

// refSize is size as first written: the weights, then the P&L sums, in two
// passes per asset, the clip by clip1.
func refSize(returns, signals, vols [][]float64, p Params) Result {
	n := len(returns[0])
	weights := make([][]float64, len(returns))
	sum := make([]float64, n)
	count := make([]int, n)
	for a, r := range returns {
		vol := vols[a]
		sig := signals[a]
		w := nas(n)
		for t := range w {
			if isNA(sig[t]) || isNA(vol[t]) || vol[t] == 0 {
				continue
			}
			w[t] = clip1(sig[t]*p.TargetVol/vol[t], -p.Leverage, p.Leverage)
		}
		for t := p.Lag; t < n; t++ {
			if isNA(w[t-p.Lag]) || isNA(r[t]) {
				continue
			}
			sum[t] += float64(w[t-p.Lag] * r[t])
			count[t]++
		}
		weights[a] = w
	}
	pnl := nas(n)
	for t := range pnl {
		if count[t] > 0 {
			pnl[t] = sum[t] / float64(count[t])
		}
	}
	return Result{Weights: weights, PnL: pnl}
}

// TestSizeAndClipMatchReference: the one-pass sizing and the branch-free
// clip give bit for bit what the first forms give, on series with NA rows,
// zeros of both signs, infinities (Inf/Inf weights) and zero volatilities,
// for clips whose bounds straddle 0 and for those that do not.
func TestSizeAndClipMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 29))
	value := func(scale float64) float64 {
		switch rng.IntN(12) {
		case 0:
			return NA
		case 1:
			return []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1)}[rng.IntN(4)]
		}
		return rng.NormFloat64() * scale
	}
	series := func(n int, scale float64) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = value(scale)
		}
		return x
	}
	for trial := range 300 {
		n, assets := 1+rng.IntN(80), 1+rng.IntN(4)
		if trial%20 == 0 { // several blocks of sizeRows rows
			n = 1000 + rng.IntN(1600)
		}
		var r, sig, vol [][]float64
		for range assets {
			r = append(r, series(n, 0.01))
			sig = append(sig, series(n, 1))
			v := series(n, 0.2)
			for i := range v {
				if rng.IntN(3) == 0 {
					v[i] = math.Abs(v[i])
				}
			}
			vol = append(vol, v)
		}
		p := Params{TargetVol: 0.05 + rng.Float64(), Leverage: []float64{0.5, 1, 2, 5, 1e-300}[rng.IntN(5)], Lag: 1 + rng.IntN(3)}
		got, err := Size(r, sig, vol, p)
		if err != nil {
			t.Fatal(err)
		}
		want := refSize(r, sig, vol, p)
		if i, ok := bitsEqual(got.PnL, want.PnL); !ok {
			t.Fatalf("trial %d: P&L row %d: %v, reference %v", trial, i, got.PnL[i], want.PnL[i])
		}
		for a := range want.Weights {
			if i, ok := bitsEqual(got.Weights[a], want.Weights[a]); !ok {
				t.Fatalf("trial %d: asset %d weight %d: %v, reference %v", trial, a, i, got.Weights[a][i], want.Weights[a][i])
			}
		}
		x := series(n, 2)
		bounds := [][2]float64{{-1, 1}, {-0.5, 2}, {0, 1}, {math.Copysign(0, -1), 1}, {-1, 0}, {-1, math.Copysign(0, -1)}, {0, 0}, {2, 3}, {-3, -2}, {math.Inf(-1), math.Inf(1)}, {-1e-300, 1e-300}}
		for _, b := range bounds {
			got, err := Clip(x, b[0], b[1])
			if err != nil {
				t.Fatal(err)
			}
			want := map1(x, func(v float64) float64 { return clip1(v, b[0], b[1]) })
			if i, ok := bitsEqual(got, want); !ok {
				t.Fatalf("trial %d: clip %v: row %d: %v of %v, reference %v", trial, b, i, got[i], x[i], want[i])
			}
		}
	}
}
