package kernel

import (
	"fmt"
	"math"
)

// Metric names a metric and its direction.
type Metric struct {
	Name   string
	Higher bool // true when a higher score is better, false when lower is
}

var metrics = []Metric{
	{"SRP", true},
	{"MDD", false},
	{"ARET", true},
	{"AVOL", false},
	{"SRT", true},
	{"CLM", true},
	{"HIT", true},
	{"TRN", false},
	{"TRET", true},
}

// Metrics lists the metrics in DOMAIN.md order.
func Metrics() []Metric { return append([]Metric(nil), metrics...) }

// LookupMetric returns the named metric (ErrUnknown for another name).
func LookupMetric(name string) (Metric, error) {
	for _, m := range metrics {
		if m.Name == name {
			return m, nil
		}
	}
	return Metric{}, fmt.Errorf("kernel: metric %q: %w", name, ErrUnknown)
}

// Better reports whether score a is strictly better than score b in m's
// direction. NA is never better than anything; any number beats NA.
func (m Metric) Better(a, b float64) bool {
	switch {
	case isNA(a):
		return false
	case isNA(b):
		return true
	case m.Higher:
		return a > b
	}
	return a < b
}

// Best returns the index of the best score in m's direction, the earliest
// on ties, or -1 when every score is NA.
func Best(m Metric, scores []float64) int {
	best := -1
	for i, s := range scores {
		if isNA(s) {
			continue
		}
		if best < 0 || m.Better(s, scores[best]) {
			best = i
		}
	}
	return best
}

// CommonStart returns the first row on which every P&L series is defined
// (not NA), or -1 when there is no such row. A row past the end of a
// shorter series counts as undefined for it.
func CommonStart(pnls ...[]float64) int {
	if len(pnls) == 0 {
		return -1
	}
	n := len(pnls[0])
	for _, p := range pnls[1:] {
		n = min(n, len(p))
	}
rows:
	for t := range n {
		for _, p := range pnls {
			if isNA(p[t]) {
				continue rows
			}
		}
		return t
	}
	return -1
}

// Evaluate scores one morphism with the named metric over the evaluation
// window that starts at row start (from CommonStart; -1 or past the end
// gives NA). weights are the morphism's per-asset weights, used by TRN
// only.
func Evaluate(name string, pnl []float64, weights [][]float64, start int) (float64, error) {
	if _, err := LookupMetric(name); err != nil {
		return nan, err
	}
	if name == "TRN" {
		for a, w := range weights {
			if len(w) != len(pnl) {
				return nan, fmt.Errorf("kernel: TRN: asset %d has %d weights for %d rows: %w", a, len(w), len(pnl), ErrLength)
			}
		}
	}
	if start < 0 || start >= len(pnl) {
		return nan, nil
	}
	win := pnl[start:]
	switch name {
	case "SRP":
		return SRP(win), nil
	case "MDD":
		return MDD(win), nil
	case "ARET":
		return ARET(win), nil
	case "AVOL":
		return AVOL(win), nil
	case "SRT":
		return SRT(win), nil
	case "CLM":
		return CLM(win), nil
	case "HIT":
		return HIT(win), nil
	case "TRN":
		return TRN(pnl, weights, start), nil
	}
	return TRET(win), nil
}

// defined returns the valid values of p, in order.
func defined(p []float64) []float64 {
	out := make([]float64, 0, len(p))
	for _, v := range p {
		if !isNA(v) {
			out = append(out, v)
		}
	}
	return out
}

// SRP is the Sharpe ratio mean/sd × √252 of the valid values of pnl; NA
// with fewer than 2 of them or when sd = 0.
func SRP(pnl []float64) float64 {
	v := defined(pnl)
	if len(v) < 2 {
		return nan
	}
	m, s := meanStd(v)
	if s == 0 {
		return nan
	}
	return m / s * sqrt252
}

// MDD is the maximum drawdown of E = exp(cumulative sum of the valid values
// of pnl): max over t of 1 − E_t/max_{s≤t} E_s; 0 when E never drops, NA
// when pnl has no valid value.
func MDD(pnl []float64) float64 {
	v := defined(pnl)
	if len(v) == 0 {
		return nan
	}
	var c, peak, mdd float64
	for i, x := range v {
		c += x
		e := math.Exp(c)
		if i == 0 || e > peak {
			peak = e
		}
		if dd := 1 - e/peak; dd > mdd {
			mdd = dd
		}
	}
	return mdd
}

// ARET is the annualised return mean × 252; NA without a valid value.
func ARET(pnl []float64) float64 {
	v := defined(pnl)
	if len(v) == 0 {
		return nan
	}
	return mean(v) * 252
}

// AVOL is the annualised volatility sd × √252; NA with fewer than 2 valid
// values.
func AVOL(pnl []float64) float64 {
	v := defined(pnl)
	if len(v) < 2 {
		return nan
	}
	_, s := meanStd(v)
	return s * sqrt252
}

// SRT is the Sortino ratio mean/√mean(min(pnl, 0)²) × √252, both means over
// every valid value; NA when no value is negative.
func SRT(pnl []float64) float64 {
	v := defined(pnl)
	if len(v) == 0 {
		return nan
	}
	var ss float64
	for _, x := range v {
		d := math.Min(x, 0)
		ss += float64(d * d) // explicit conversion: no FMA
	}
	if ss == 0 {
		return nan
	}
	return mean(v) / math.Sqrt(ss/float64(len(v))) * sqrt252
}

// CLM is the Calmar ratio ARET/MDD; NA when MDD is 0 or NA.
func CLM(pnl []float64) float64 {
	mdd := MDD(pnl)
	if isNA(mdd) || mdd == 0 {
		return nan
	}
	return ARET(pnl) / mdd
}

// HIT is the share of positive values among the nonzero valid values; NA
// when none is nonzero.
func HIT(pnl []float64) float64 {
	var pos, nonzero int
	for _, x := range pnl {
		switch {
		case x > 0:
			pos++
			nonzero++
		case x < 0:
			nonzero++
		}
	}
	if nonzero == 0 {
		return nan
	}
	return float64(pos) / float64(nonzero)
}

// TRET is the total log return Σ pnl over the valid values; NA without one.
func TRET(pnl []float64) float64 {
	v := defined(pnl)
	if len(v) == 0 {
		return nan
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}

// TRN is the turnover: the mean, over the rows t ≥ start where pnl is
// defined, of Σ_assets |w_t − w_{t−1}|, NA weights counted as 0 and the
// weight before row 0 as 0. NA when no row qualifies. Every weights[a] must
// be as long as pnl (Evaluate checks).
func TRN(pnl []float64, weights [][]float64, start int) float64 {
	start = max(start, 0)
	if start >= len(pnl) {
		return nan
	}
	return trnOf(pnl, turnover(weights, start, len(pnl)), start, start)
}

// Turnover returns the per-row turnover Σ_assets |w_t − w_{t−1}| of every
// row (NA weights counted as 0, the weight before row 0 as 0), summed over
// assets in order. n is the number of rows; every weights[a] must have n.
// TRNOf(pnl, Turnover(weights, len(pnl)), start) is bit for bit
// TRN(pnl, weights, start), so a caller can keep the turnover series and
// drop the weights.
func Turnover(weights [][]float64, n int) []float64 {
	return turnover(weights, 0, n)
}

// turnover returns the per-row turnover of rows start..n-1, indexed from
// start.
func turnover(weights [][]float64, start, n int) []float64 {
	// Per-row turnover, accumulated asset by asset (column order) so each
	// weight column is read sequentially; the sum for a row is the same
	// left-to-right sum over assets as a row-by-row loop would give.
	tv := make([]float64, n-start)
	for _, w := range weights {
		for t := start; t < n; t++ {
			prev := 0.0
			if t > 0 {
				prev = zeroNA(w[t-1])
			}
			tv[t-start] += math.Abs(zeroNA(w[t]) - prev)
		}
	}
	return tv
}

// TRNOf is TRN from a turnover series as Turnover returns it (tv[t] is row
// t's turnover); tv must be as long as pnl (ErrLength).
func TRNOf(pnl, tv []float64, start int) (float64, error) {
	if len(tv) != len(pnl) {
		return nan, fmt.Errorf("kernel: TRN: %d turnover rows for %d P&L rows: %w", len(tv), len(pnl), ErrLength)
	}
	start = max(start, 0)
	if start >= len(pnl) {
		return nan, nil
	}
	return trnOf(pnl, tv, start, 0), nil
}

// trnOf averages tv over the rows t ≥ start where pnl is defined; tv[t-off]
// is row t's turnover.
func trnOf(pnl, tv []float64, start, off int) float64 {
	var sum float64
	var n int
	for t := start; t < len(pnl); t++ {
		if isNA(pnl[t]) {
			continue
		}
		sum += tv[t-off]
		n++
	}
	if n == 0 {
		return nan
	}
	return sum / float64(n)
}

func zeroNA(x float64) float64 {
	if isNA(x) {
		return 0
	}
	return x
}
