package kernel

import (
	"fmt"
	"math"
	"testing"
)

// An O(n) rolling mean and standard deviation, for the record: NOT the
// production kernel. The production kernel sums every window on its own,
// left to right (O(n·w)), and its bits are part of every stored footprint;
// a running update rounds differently, so switching to it would change
// the last bits of every windowed statistic and break the replay of stored
// footprints. This test measures how close a careful O(n) form comes, and
// the benchmark what it would save, so the choice can be made knowingly.
//
// The form: sums of the deviations from an anchor c (the first value of
// the window at the last re-anchoring), updated as each window moves by
// one value — S1 += (x_in − c) − (x_out − c), S2 += (x_in − c)² − (x_out
// − c)² — with Neumaier's compensation on both, and recomputed exactly
// every reanchor windows. Then m = c + S1/w and s² = (S2 − S1²/w)/(w − 1).
//
// Error bound. Between exact recomputations, a Neumaier sum after k
// updates is within 2u·|S| + O(k·u²)·Σ|terms| of its exact value (u =
// 2⁻⁵³), the Σ over the ≤ 2·(w + R) terms added and removed since (R =
// reanchor). With d = max |x − c| over those values, |ΔS1| ≲ 2u·w·d and
// |ΔS2| ≲ 2u·w·d² to first order, and the final subtraction S2 − S1²/w
// adds the cancellation error ≲ 2u·w·d². So the variance's relative error
// is ≲ 6u·(d/s)²·w/(w − 1) + O(u²(w + R)), s the window's standard
// deviation: it grows with how far the values have wandered from the
// anchor in units of the window's own spread (a trending running sum over
// R = 1,024 windows), which is what re-anchoring bounds. On the data
// below the largest difference from the production kernel is ~1e-12,
// against a tolerance of 1e-9 (the pandas comparison's); the production
// kernel's own error against the exact value is ≲ w·u relative.

const reanchor = 1024 // windows between exact recomputations

// neumaier is a compensated running sum: Neumaier's, with the rounding
// error of each addition found by Knuth's branch-free TwoSum (the same
// error, exactly, as Neumaier's branch on |s| ≥ |x|).
type neumaier struct{ s, c float64 }

func (n *neumaier) add(x float64) {
	t := n.s + x
	z := t - n.s
	n.c += (n.s - (t - z)) + (x - z)
	n.s = t
}

func (n *neumaier) sum() float64 { return n.s + n.c }

// onWindowStats is windowStats in O(len(v)): the mean and sample standard
// deviation of every v[e : e+w]; flat windows get (v[e], 0) as in meanStd.
func onWindowStats(v []float64, w int) (mean, std []float64) {
	n := len(v) - w + 1
	if n <= 0 || w < 2 {
		return nil, nil
	}
	mean, std = make([]float64, n), make([]float64, n)
	var s1, s2 neumaier
	var c float64
	fw := float64(w)
	for e := range n {
		if e%reanchor == 0 { // exact recomputation around a new anchor
			c = v[e]
			s1, s2 = neumaier{}, neumaier{}
			for _, x := range v[e : e+w] {
				d := x - c
				s1.add(d)
				s2.add(float64(d * d))
			}
		} else {
			in, out := v[e+w-1]-c, v[e-1]-c
			s1.add(in)
			s1.add(-out)
			s2.add(float64(in * in))
			s2.add(-float64(out * out))
		}
		S1, S2 := s1.sum(), s2.sum()
		mean[e] = c + S1/fw
		q := (S2 - float64(S1*S1)/fw) / float64(w-1)
		std[e] = math.Sqrt(max(q, 0))
	}
	run := 0
	for k := range v {
		if k > 0 && v[k] == v[k-1] {
			run++
		} else {
			run = 1
		}
		if k >= w-1 && run >= w {
			e := k - w + 1
			mean[e], std[e] = v[e], 0
		}
	}
	return mean, std
}

// onWzs and onTrailingVol are Wzs and TrailingVol over onWindowStats.
func onWzs(x []float64, w int) []float64 {
	vals, before := validWithCounts(x)
	mean, std := onWindowStats(vals, w)
	out := nas(len(x))
	for t := range x {
		if k := before[t]; k >= w && !isNA(x[t]) && std[k-w] != 0 {
			out[t] = (x[t] - mean[k-w]) / std[k-w]
		}
	}
	return out
}

func onTrailingVol(r []float64, w int) []float64 {
	vals, before := validWithCounts(r)
	_, std := onWindowStats(vals, w)
	out := nas(len(r))
	for t := range r {
		if k := before[t]; k >= w {
			out[t] = std[k-w] * sqrt252
		}
	}
	return out
}

// validWithCounts returns the valid values of x and, for every row, how
// many come strictly before it.
func validWithCounts(x []float64) (vals []float64, before []int) {
	before = make([]int, len(x))
	for t, v := range x {
		before[t] = len(vals)
		if !isNA(v) {
			vals = append(vals, v)
		}
	}
	return vals, before
}

// TestOnePassAgreesWithin1e9: the O(n) form agrees with the production
// kernel to 1e-9 relative (to max(|value|, the series' RMS); NA where it
// is NA) on the series a family
// windows — the running sum of log returns (MOM_WZS's z-score) and the log
// returns (the trailing volatility) — of the 30-column benchmark panel
// and of every real series, for the grid's windows. It reports the largest
// relative difference; it does not agree bit for bit, which is why it is
// not used.
func TestOnePassAgreesWithin1e9(t *testing.T) {
	var cols [][]float64
	f := panel(t, 10000, 30)
	for j := range f.Width() {
		cols = append(cols, f.Column(j))
	}
	for _, name := range []string{"wti-daily.csv", "ffn-test-data.csv", "crude-oil-wti-cushing.csv", "natural-gas-daily.csv", "vix-daily.csv"} {
		g := loadReal(t, name)
		for j := range g.Width() {
			cols = append(cols, g.Column(j))
		}
	}
	worst, at, bitsDiffer, values := 0.0, "", 0, 0
	// Relative to max(|value|, the series' RMS), as the pandas comparison
	// measures (differential_test.go): a z-score x − m near 0 comes out of
	// cancellation, and a last-bit difference in m is large relative to it
	// but not to the series.
	compare := func(label string, got, want []float64) {
		t.Helper()
		var ss float64
		var m int
		for _, v := range want {
			if !isNA(v) {
				ss += float64(v * v)
				m++
			}
		}
		scale := math.Sqrt(ss / float64(max(m, 1)))
		for i := range want {
			if isNA(got[i]) != isNA(want[i]) {
				t.Fatalf("%s row %d: one pass %v, kernel %v", label, i, got[i], want[i])
			}
			if isNA(want[i]) {
				continue
			}
			values++
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				bitsDiffer++
			}
			rel := math.Abs(got[i]-want[i]) / math.Max(math.Abs(want[i]), scale)
			if rel > worst {
				worst, at = rel, fmt.Sprintf("%s row %d", label, i)
			}
			if rel > 1e-9 {
				t.Errorf("%s row %d: one pass %.17g, kernel %.17g (relative %.3g)", label, i, got[i], want[i], rel)
			}
		}
	}
	for j, price := range cols {
		r := Dlog(price)
		x := Cs0(r)
		for _, w := range []int{20, 40, 60, 120, 250} {
			want, _ := Wzs(x, w)
			compare(fmt.Sprintf("column %d wzs %d", j, w), onWzs(x, w), want)
			want, _ = TrailingVol(r, w)
			compare(fmt.Sprintf("column %d trailing vol %d", j, w), onTrailingVol(r, w), want)
		}
	}
	t.Logf("%d values: largest relative difference %.3g (%s); %d values (%.1f%%) differ in their bits from the kernel's",
		values, worst, at, bitsDiffer, 100*float64(bitsDiffer)/float64(values))
}

// BenchmarkOnePassVsKernel times the windowed kernels MOM_WZS runs per
// column — wzs over the running sum, trailing vol over the returns — for
// the benchmark grid's windows, in the production form and in the O(n)
// form, on one 10,000-row column.
func BenchmarkOnePassVsKernel(b *testing.B) {
	r := Dlog(panel(b, 10000, 1).Column(0))
	x := Cs0(r)
	for _, w := range []int{20, 60, 250} {
		b.Run(fmt.Sprintf("kernel/w=%d", w), func(b *testing.B) {
			for b.Loop() {
				Wzs(x, w)
				TrailingVol(r, w)
			}
		})
		b.Run(fmt.Sprintf("onepass/w=%d", w), func(b *testing.B) {
			for b.Loop() {
				onWzs(x, w)
				onTrailingVol(r, w)
			}
		})
	}
}
