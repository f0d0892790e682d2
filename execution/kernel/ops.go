package kernel

import (
	"fmt"
	"math"
	"time"

	"github.com/groundgate/groundgate/execution/frame"
)

var nan = math.NaN()

func isNA(x float64) bool { return x != x }

// nas returns a series of n NA values.
func nas(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = nan
	}
	return out
}

// previousValid walks x and calls f(t, p) for every valid row t that has an
// earlier valid row, p being the most recent one.
func previousValid(x []float64, f func(t, p int)) {
	p := -1
	for t, v := range x {
		if isNA(v) {
			continue
		}
		if p >= 0 {
			f(t, p)
		}
		p = t
	}
}

// Dlog returns ln x_t − ln x_p, p the most recent earlier row with a valid
// x; NA if there is none or if x_t or x_p ≤ 0.
func Dlog(x []float64) []float64 {
	out := make([]float64, len(x))
	dlogInto(out, x)
	return out
}

func dlogInto(out, x []float64) {
	out = out[:len(x)]
	if dlogVec(out, x) {
		return
	}
	// Every logarithm at once (out holds ln x_t until row t is done), each
	// taken once and kept for the next valid row.
	logs(x, out)
	var lp float64   // ln x_p, when x_p > 0
	posPrev := false // there is an earlier valid row p and x_p > 0
	for t, v := range x {
		lt := out[t]
		out[t] = nan
		if isNA(v) {
			continue
		}
		pos := v > 0
		if pos && posPrev {
			out[t] = lt - lp
		}
		posPrev, lp = pos, lt
	}
}

// dlogFinish completes a Dlog whose rows 1 … from−1 hold ln x_t −
// ln x_{t−1} where x_t and x_{t−1} are positive and finite, NA elsewhere
// (dlogVec): row 0, the rows from on, and the rows right after NA rows,
// whose previous valid row is further back. Its logarithms are math.Log's,
// as logs takes them. from ≥ 1.
func dlogFinish(out, x []float64, from int) {
	if len(x) == 0 {
		return
	}
	out[0] = nan
	for t := from; t < len(x); t++ {
		out[t] = nan
		if x[t] > 0 && x[t-1] > 0 {
			out[t] = math.Log(x[t]) - math.Log(x[t-1])
		}
	}
	var small [64]int
	nas := naRows(x, small[:0])
	start := 0 // the first row of the run of NA rows ending at k
	for i, k := range nas {
		if i == 0 || nas[i-1] != k-1 {
			start = k
		}
		t, p := k+1, start-1
		if t == len(x) || isNA(x[t]) {
			continue
		}
		out[t] = nan
		if p >= 0 && x[t] > 0 && x[p] > 0 {
			out[t] = math.Log(x[t]) - math.Log(x[p])
		}
	}
}

// Ret returns x_t/x_p − 1, p as in Dlog; NA if there is none or x_p = 0.
func Ret(x []float64) []float64 {
	out := nas(len(x))
	previousValid(x, func(t, p int) {
		if x[p] != 0 {
			out[t] = x[t]/x[p] - 1
		}
	})
	return out
}

// Shift returns x_{t−k}; the first k rows are NA. k < 0 (look-ahead) is
// ErrParam.
func Shift(x []float64, k int) ([]float64, error) {
	if k < 0 {
		return nil, fmt.Errorf("kernel: shift %d: %w: k must be ≥ 0 (no look-ahead)", k, ErrParam)
	}
	out := nas(len(x))
	for t := k; t < len(x); t++ {
		out[t] = x[t-k]
	}
	return out, nil
}

// Diff returns x_t − x_{t−k}; the first k rows are NA. k < 0 is ErrParam.
func Diff(x []float64, k int) ([]float64, error) {
	if k < 0 {
		return nil, fmt.Errorf("kernel: diff %d: %w: k must be ≥ 0", k, ErrParam)
	}
	out := nas(len(x))
	for t := k; t < len(x); t++ {
		out[t] = x[t] - x[t-k]
	}
	return out, nil
}

// Locf carries the last valid value forward; leading NA rows stay NA.
func Locf(x []float64) []float64 {
	out := make([]float64, len(x))
	last := nan
	for t, v := range x {
		if !isNA(v) {
			last = v
		}
		out[t] = last
	}
	return out
}

func cumsum(x []float64, start float64) []float64 {
	out := make([]float64, len(x))
	cumsumInto(out, x, start)
	return out
}

func cumsumInto(out, x []float64, start float64) {
	out = out[:len(x)]
	s := start
	for t, v := range x {
		if isNA(v) {
			out[t] = nan
			continue
		}
		s += v
		out[t] = s
	}
}

// Cs0 is the running sum of the valid values, starting at 0; NA rows give
// NA and leave the sum unchanged.
func Cs0(x []float64) []float64 { return cumsum(x, 0) }

// Cs1 is the running sum of the valid values, starting at 1; NA rows give
// NA and leave the sum unchanged.
func Cs1(x []float64) []float64 { return cumsum(x, 1) }

// Ecs1 is exp(Cs0(x)): an equity curve, starting from 1, from log returns.
func Ecs1(x []float64) []float64 { return Exp(Cs0(x)) }

// Wkd sets the rows that fall on a Saturday or Sunday to NA. dates must be
// as long as x (ErrLength).
func Wkd(x []float64, dates []frame.Date) ([]float64, error) {
	if len(dates) != len(x) {
		return nil, fmt.Errorf("kernel: wkd: %d dates for %d rows: %w", len(dates), len(x), ErrLength)
	}
	out := make([]float64, len(x))
	for t, v := range x {
		switch dates[t].Weekday() {
		case time.Saturday, time.Sunday:
			out[t] = nan
		default:
			out[t] = v
		}
	}
	return out, nil
}

// Spread returns column a − column b.
func Spread(a, b []float64) ([]float64, error) { return Sub(a, b) }

// Clip bounds every value to [lo, hi]. lo > hi or a NaN bound is ErrParam.
func Clip(x []float64, lo, hi float64) ([]float64, error) {
	if !(lo <= hi) {
		return nil, fmt.Errorf("kernel: clip %g %g: %w: need lo ≤ hi", lo, hi, ErrParam)
	}
	return clip(x, lo, hi), nil
}

func clip(x []float64, lo, hi float64) []float64 {
	out := make([]float64, len(x))
	clipInto(out, x, lo, hi)
	return out
}

func clipInto(out, x []float64, lo, hi float64) {
	out = out[:len(x)]
	if !(lo < 0 && hi > 0) {
		for t, v := range x {
			if isNA(v) {
				out[t] = nan
			} else {
				out[t] = clip1(v, lo, hi)
			}
		}
		return
	}
	// With lo < 0 < hi no zero is ever compared with a zero bound, so
	// min(max(v, lo), hi) is clip1(v, lo, hi) for every non-NaN v, without
	// a branch that mispredicts on a signal that often hits its bounds.
	for t := clipVec(x, lo, hi, out); t < len(x); t++ {
		v := x[t]
		c := min(max(v, lo), hi)
		if isNA(v) {
			c = nan
		}
		out[t] = c
	}
}

func clip1(v, lo, hi float64) float64 {
	switch {
	case v < lo:
		return lo
	case v > hi:
		return hi
	}
	return v
}

func map1(x []float64, f func(float64) float64) []float64 {
	out := make([]float64, len(x))
	for t, v := range x {
		if isNA(v) {
			out[t] = nan
			continue
		}
		out[t] = f(v)
	}
	return out
}

// Sign returns −1, 0 or 1 (−0 gives 0).
func Sign(x []float64) []float64 {
	return map1(x, func(v float64) float64 {
		switch {
		case v > 0:
			return 1
		case v < 0:
			return -1
		}
		return 0
	})
}

// Neg returns −x.
func Neg(x []float64) []float64 { return map1(x, func(v float64) float64 { return -v }) }

// Abs returns |x|.
func Abs(x []float64) []float64 { return map1(x, math.Abs) }

// Log returns ln x; NA for x ≤ 0.
func Log(x []float64) []float64 {
	return map1(x, func(v float64) float64 {
		if v <= 0 {
			return nan
		}
		return math.Log(v)
	})
}

// Exp returns e^x.
func Exp(x []float64) []float64 { return map1(x, math.Exp) }

// Sqrt returns √x; NA for x < 0.
func Sqrt(x []float64) []float64 {
	return map1(x, func(v float64) float64 {
		if v < 0 {
			return nan
		}
		return math.Sqrt(v)
	})
}

// Inv returns 1/x; NA for x = 0.
func Inv(x []float64) []float64 {
	return map1(x, func(v float64) float64 {
		if v == 0 {
			return nan
		}
		return 1 / v
	})
}

func map2(op string, a, b []float64, f func(x, y float64) float64) ([]float64, error) {
	if len(a) != len(b) {
		return nil, fmt.Errorf("kernel: %s: %d rows and %d rows: %w", op, len(a), len(b), ErrLength)
	}
	out := make([]float64, len(a))
	for t := range a {
		if isNA(a[t]) || isNA(b[t]) {
			out[t] = nan
			continue
		}
		out[t] = f(a[t], b[t])
	}
	return out, nil
}

func mapScalar(x []float64, c float64, f func(x, y float64) float64) []float64 {
	if isNA(c) {
		return nas(len(x))
	}
	return map1(x, func(v float64) float64 { return f(v, c) })
}

func add(x, y float64) float64 { return x + y }
func sub(x, y float64) float64 { return x - y }
func mul(x, y float64) float64 { return x * y }
func div(x, y float64) float64 {
	if y == 0 {
		return nan
	}
	return x / y
}

func truth(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func gt(x, y float64) float64 { return truth(x > y) }
func lt(x, y float64) float64 { return truth(x < y) }
func ge(x, y float64) float64 { return truth(x >= y) }
func le(x, y float64) float64 { return truth(x <= y) }
func eq(x, y float64) float64 { return truth(x == y) }
func ne(x, y float64) float64 { return truth(x != y) }

// Add returns a + b.
func Add(a, b []float64) ([]float64, error) { return map2("add", a, b, add) }

// Sub returns a − b.
func Sub(a, b []float64) ([]float64, error) { return map2("sub", a, b, sub) }

// Mul returns a × b.
func Mul(a, b []float64) ([]float64, error) { return map2("mul", a, b, mul) }

// Div returns a ÷ b; NA where b = 0.
func Div(a, b []float64) ([]float64, error) { return map2("div", a, b, div) }

// Gt returns 1 where a > b, else 0.
func Gt(a, b []float64) ([]float64, error) { return map2("gt", a, b, gt) }

// Lt returns 1 where a < b, else 0.
func Lt(a, b []float64) ([]float64, error) { return map2("lt", a, b, lt) }

// Ge returns 1 where a ≥ b, else 0.
func Ge(a, b []float64) ([]float64, error) { return map2("ge", a, b, ge) }

// Le returns 1 where a ≤ b, else 0.
func Le(a, b []float64) ([]float64, error) { return map2("le", a, b, le) }

// Eq returns 1 where a = b, else 0.
func Eq(a, b []float64) ([]float64, error) { return map2("eq", a, b, eq) }

// Ne returns 1 where a ≠ b, else 0.
func Ne(a, b []float64) ([]float64, error) { return map2("ne", a, b, ne) }

// AddScalar returns x + c.
func AddScalar(x []float64, c float64) []float64 { return mapScalar(x, c, add) }

// SubScalar returns x − c.
func SubScalar(x []float64, c float64) []float64 { return mapScalar(x, c, sub) }

// ScalarSub returns c − x.
func ScalarSub(c float64, x []float64) []float64 {
	return mapScalar(x, c, func(v, c float64) float64 { return c - v })
}

// MulScalar returns x × c.
func MulScalar(x []float64, c float64) []float64 { return mapScalar(x, c, mul) }

// DivScalar returns x ÷ c; every row NA when c = 0.
func DivScalar(x []float64, c float64) []float64 { return mapScalar(x, c, div) }

// ScalarDiv returns c ÷ x; NA where x = 0.
func ScalarDiv(c float64, x []float64) []float64 {
	return mapScalar(x, c, func(v, c float64) float64 { return div(c, v) })
}

// GtScalar returns 1 where x > c, else 0.
func GtScalar(x []float64, c float64) []float64 { return mapScalar(x, c, gt) }

// LtScalar returns 1 where x < c, else 0.
func LtScalar(x []float64, c float64) []float64 { return mapScalar(x, c, lt) }

// GeScalar returns 1 where x ≥ c, else 0.
func GeScalar(x []float64, c float64) []float64 { return mapScalar(x, c, ge) }

// LeScalar returns 1 where x ≤ c, else 0.
func LeScalar(x []float64, c float64) []float64 { return mapScalar(x, c, le) }

// EqScalar returns 1 where x = c, else 0.
func EqScalar(x []float64, c float64) []float64 { return mapScalar(x, c, eq) }

// NeScalar returns 1 where x ≠ c, else 0.
func NeScalar(x []float64, c float64) []float64 { return mapScalar(x, c, ne) }
