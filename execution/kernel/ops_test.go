package kernel

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/groundgate/groundgate/execution/frame"
)

// NA in test vectors.
var NA = math.NaN()

// hand is DOMAIN.md's hand vector.
var hand = []float64{1, 2, NA, 4, 5, 6, 7, 8}

// closeTo compares with NaN equal to NaN and a relative tolerance.
func closeTo(got, want, rel float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	if got == want {
		return true
	}
	return math.Abs(got-want) <= rel*math.Max(math.Abs(got), math.Abs(want))
}

func checkSeries(t *testing.T, name string, got, want []float64, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: length %d, want %d", name, len(got), len(want))
		return
	}
	for i := range want {
		if !closeTo(got[i], want[i], rel) {
			t.Errorf("%s: row %d = %v, want %v\n got  %v\n want %v", name, i, got[i], want[i], got, want)
			return
		}
	}
}

func must(x []float64, err error) []float64 {
	if err != nil {
		panic(err)
	}
	return x
}

// TestDomainHandVector pins DOMAIN.md's own vector, to 1e-6 as printed
// there and to 1e-15 against the exact expressions.
func TestDomainHandVector(t *testing.T) {
	ln := math.Log
	checkSeries(t, "dlog", Dlog(hand), []float64{NA, ln(2), NA, ln(2), ln(1.25), ln(1.2), ln(7.0 / 6), ln(8.0 / 7)}, 1e-15)
	checkSeries(t, "cs1", Cs1(hand), []float64{2, 4, NA, 8, 13, 19, 26, 34}, 0)
	wzs := must(Wzs(hand, 3))
	checkSeries(t, "wzs 3 (DOMAIN digits)", wzs, []float64{NA, NA, NA, NA, 1.745743, 1.527525, 2, 2}, 1e-6)
	// Exactly: row 4 uses {1,2,4}: m = 7/3, s² = (16/9+1/9+25/9)/2 = 7/3, so
	// z = (5 − 7/3)/√(7/3) = (8/3)/√(7/3); row 5 uses {2,4,5}: m = 11/3,
	// s² = (25/9+1/9+16/9)/2 = 7/3, z = (7/3)/√(7/3) = √(7/3); rows 6, 7 use
	// {4,5,6}, {5,6,7}: s = 1, z = 2.
	s := math.Sqrt(7.0 / 3)
	checkSeries(t, "wzs 3 (exact)", wzs, []float64{NA, NA, NA, NA, (8.0 / 3) / s, s, 2, 2}, 1e-15)
}

func TestOperations(t *testing.T) {
	ln := math.Log
	r252 := math.Sqrt(252)
	s73 := math.Sqrt(7.0 / 3)
	tests := []struct {
		name string
		got  []float64
		want []float64
		rel  float64
	}{
		// dlog: p skips NA rows; a non-positive x_t or x_p gives NA, so a
		// negative price blanks its own row and the next valid one.
		{"dlog leading NA", Dlog([]float64{NA, 2, NA, 4}), []float64{NA, NA, NA, ln(4) - ln(2)}, 0},
		{"dlog negative price", Dlog([]float64{18.27, -36.98, 8.91, 9}), []float64{NA, NA, NA, ln(9) - ln(8.91)}, 0},
		{"dlog zero", Dlog([]float64{1, 0, 2}), []float64{NA, NA, NA}, 0},
		{"dlog empty", Dlog(nil), []float64{}, 0},
		// ret: x_t/x_p − 1 = 2/1−1, NA, 4/2−1, 5/4−1, 6/5−1, 7/6−1, 8/7−1.
		{"ret hand", Ret(hand), []float64{NA, 1, NA, 1, 0.25, 6.0/5 - 1, 7.0/6 - 1, 8.0/7 - 1}, 1e-15},
		{"ret x_p = 0", Ret([]float64{0, 1, 2}), []float64{NA, NA, 1}, 0},
		{"ret negative", Ret([]float64{-2, -1, 3}), []float64{NA, -0.5, -4}, 0}, // −1/−2 − 1, 3/−1 − 1
		// shift 2: x_{t−2}.
		{"shift 2", must(Shift(hand, 2)), []float64{NA, NA, 1, 2, NA, 4, 5, 6}, 0},
		{"shift 0", must(Shift(hand, 0)), hand, 0},
		{"shift past end", must(Shift([]float64{1, 2}, 5)), []float64{NA, NA}, 0},
		// diff 2: NA−1, 4−2, 5−NA, 6−4, 7−5, 8−6.
		{"diff 2", must(Diff(hand, 2)), []float64{NA, NA, NA, 2, NA, 2, 2, 2}, 0},
		{"diff 0", must(Diff(hand, 0)), []float64{0, 0, NA, 0, 0, 0, 0, 0}, 0},
		{"locf", Locf(hand), []float64{1, 2, 2, 4, 5, 6, 7, 8}, 0},
		{"locf leading NA", Locf([]float64{NA, 3, NA, NA}), []float64{NA, 3, 3, 3}, 0},
		// cs0: 1, 1+2, NA, 3+4, 7+5, 12+6, 18+7, 25+8.
		{"cs0", Cs0(hand), []float64{1, 3, NA, 7, 12, 18, 25, 33}, 0},
		{"cs1 leading NA", Cs1([]float64{NA, 1}), []float64{NA, 2}, 0},
		{"ecs1", Ecs1([]float64{NA, 0.1, -0.3, NA, 0.2}), []float64{NA, math.Exp(0.1), math.Exp(0.1 - 0.3), NA, math.Exp(0.1 - 0.3 + 0.2)}, 1e-15},
		// rmean 3 over valid values up to t: {1,2,4}, {2,4,5}, {4,5,6}, …
		{"rmean 3", must(Rmean(hand, 3)), []float64{NA, NA, NA, 7.0 / 3, 11.0 / 3, 5, 6, 7}, 1e-15},
		{"rmean 1", must(Rmean(hand, 1)), hand, 0},
		{"rmean NA row", must(Rmean([]float64{1, 2, NA, 3}, 2)), []float64{NA, 1.5, NA, 2.5}, 0},
		// rstd 3: {1,2,4} and {2,4,5} both have s² = 42/9/2 = 7/3; then 1.
		{"rstd 3", must(Rstd(hand, 3)), []float64{NA, NA, NA, s73, s73, 1, 1, 1}, 1e-15},
		{"rstd constant", must(Rstd([]float64{0.1, 0.1, 0.1, 0.1}, 3)), []float64{NA, NA, 0, 0}, 0},
		// wzs: s = 0 gives NA, and a flat window is exactly flat (0.1+0.1+0.1
		// would leave a rounding residue).
		{"wzs s = 0", must(Wzs([]float64{3, 3, 3, 5}, 3)), []float64{NA, NA, NA, NA}, 0},
		{"wzs flat 0.1", must(Wzs([]float64{0.1, 0.1, 0.1, 0.2}, 3)), []float64{NA, NA, NA, NA}, 0},
		{"wzs x_t NA", must(Wzs([]float64{1, 2, 3, NA, 5}, 2)), []float64{NA, NA, (3 - 1.5) / math.Sqrt(0.5), NA, (5 - 2.5) / math.Sqrt(0.5)}, 1e-15},
		// vnorm 3: x_t/(s·√252), s over the 3 valid values before t:
		// row 4 {1,2,4}, row 5 {2,4,5}: s = √(7/3); rows 6, 7: s = 1.
		{"vnorm 3", must(Vnorm(hand, 3)), []float64{NA, NA, NA, NA, 5 / (s73 * r252), 6 / (s73 * r252), 7 / r252, 8 / r252}, 1e-15},
		{"vnorm s = 0", must(Vnorm([]float64{2, 2, 2}, 2)), []float64{NA, NA, NA}, 0},
		{"spread", must(Spread([]float64{5, NA, 1}, []float64{2, 1, NA})), []float64{3, NA, NA}, 0},
		{"clip 2 5", must(Clip(hand, 2, 5)), []float64{2, 2, NA, 4, 5, 5, 5, 5}, 0},
		{"clip infinite bounds", must(Clip([]float64{-1e300, 1e300}, math.Inf(-1), 0)), []float64{-1e300, 0}, 0},
		{"sign", Sign([]float64{-2, 0, NA, 3, math.Copysign(0, -1)}), []float64{-1, 0, NA, 1, 0}, 0},
		{"neg", Neg([]float64{-2, 0, NA, 3}), []float64{2, 0, NA, -3}, 0},
		{"abs", Abs([]float64{-2, 0, NA, 3}), []float64{2, 0, NA, 3}, 0},
		{"log", Log([]float64{1, math.E, 0, -1, NA}), []float64{0, 1, NA, NA, NA}, 0},
		{"exp", Exp([]float64{0, 1, NA, -math.Inf(1)}), []float64{1, math.E, NA, 0}, 0},
		{"sqrt", Sqrt([]float64{4, 0, -1, NA, 2.25}), []float64{2, 0, NA, NA, 1.5}, 0},
		{"inv", Inv([]float64{2, 0, -4, NA}), []float64{0.5, NA, -0.25, NA}, 0},
		// a = [1, 2, NA, 6], b = [2, 0, 1, NA]: NA anywhere gives NA.
		{"add", must(Add([]float64{1, 2, NA, 6}, []float64{2, 0, 1, NA})), []float64{3, 2, NA, NA}, 0},
		{"sub", must(Sub([]float64{1, 2, NA, 6}, []float64{2, 0, 1, NA})), []float64{-1, 2, NA, NA}, 0},
		{"mul", must(Mul([]float64{1, 2, NA, 6}, []float64{2, 0, 1, NA})), []float64{2, 0, NA, NA}, 0},
		{"div by 0", must(Div([]float64{1, 2, 0, 6}, []float64{2, 0, 0, 3})), []float64{0.5, NA, NA, 2}, 0},
		{"add scalar", AddScalar([]float64{1, NA}, 2), []float64{3, NA}, 0},
		{"sub scalar", SubScalar([]float64{1, NA}, 2), []float64{-1, NA}, 0},
		{"scalar sub", ScalarSub(2, []float64{1, NA}), []float64{1, NA}, 0},
		{"mul scalar", MulScalar([]float64{1.5, NA}, 2), []float64{3, NA}, 0},
		{"div scalar", DivScalar([]float64{1, NA}, 4), []float64{0.25, NA}, 0},
		{"div scalar 0", DivScalar([]float64{1, 0}, 0), []float64{NA, NA}, 0},
		{"scalar div", ScalarDiv(1, []float64{4, 0, NA}), []float64{0.25, NA, NA}, 0},
		{"NA scalar", AddScalar([]float64{1, 2}, NA), []float64{NA, NA}, 0},
		// a = [1, 2, NA, 3, 2], b = [2, 2, 1, NA, 1].
		{"gt", must(Gt([]float64{1, 2, NA, 3, 2}, []float64{2, 2, 1, NA, 1})), []float64{0, 0, NA, NA, 1}, 0},
		{"lt", must(Lt([]float64{1, 2, NA, 3, 2}, []float64{2, 2, 1, NA, 1})), []float64{1, 0, NA, NA, 0}, 0},
		{"ge", must(Ge([]float64{1, 2, NA, 3, 2}, []float64{2, 2, 1, NA, 1})), []float64{0, 1, NA, NA, 1}, 0},
		{"le", must(Le([]float64{1, 2, NA, 3, 2}, []float64{2, 2, 1, NA, 1})), []float64{1, 1, NA, NA, 0}, 0},
		{"eq", must(Eq([]float64{1, 2, NA, 3, 2}, []float64{2, 2, 1, NA, 1})), []float64{0, 1, NA, NA, 0}, 0},
		{"ne", must(Ne([]float64{1, 2, NA, 3, 2}, []float64{2, 2, 1, NA, 1})), []float64{1, 0, NA, NA, 1}, 0},
		{"gt scalar", GtScalar([]float64{1, 2, 3, NA}, 2), []float64{0, 0, 1, NA}, 0},
		{"lt scalar", LtScalar([]float64{1, 2, 3, NA}, 2), []float64{1, 0, 0, NA}, 0},
		{"ge scalar", GeScalar([]float64{1, 2, 3, NA}, 2), []float64{0, 1, 1, NA}, 0},
		{"le scalar", LeScalar([]float64{1, 2, 3, NA}, 2), []float64{1, 1, 0, NA}, 0},
		{"eq scalar", EqScalar([]float64{1, 2, 3, NA}, 2), []float64{0, 1, 0, NA}, 0},
		{"ne scalar", NeScalar([]float64{1, 2, 3, NA}, 2), []float64{1, 0, 1, NA}, 0},
	}
	for _, tt := range tests {
		checkSeries(t, tt.name, tt.got, tt.want, tt.rel)
	}
}

func TestWkd(t *testing.T) {
	// 2024-01-05 is a Friday.
	start := frame.DateOf(2024, time.January, 5)
	dates := []frame.Date{start, start + 1, start + 2, start + 3}
	checkSeries(t, "wkd", must(Wkd([]float64{1, 2, 3, NA}, dates)), []float64{1, NA, NA, NA}, 0)
	checkSeries(t, "wkd", must(Wkd([]float64{1, 2, 3, 4}, dates)), []float64{1, NA, NA, 4}, 0)
	if _, err := Wkd([]float64{1}, dates); !errors.Is(err, ErrLength) {
		t.Errorf("Wkd length mismatch: %v", err)
	}
}

func TestOperationErrors(t *testing.T) {
	x := []float64{1, 2, 3}
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"shift -1", second(Shift(x, -1)), ErrParam},
		{"diff -1", second(Diff(x, -1)), ErrParam},
		{"rmean 0", second(Rmean(x, 0)), ErrParam},
		{"rstd 1", second(Rstd(x, 1)), ErrParam},
		{"wzs 1", second(Wzs(x, 1)), ErrParam},
		{"vnorm 1", second(Vnorm(x, 1)), ErrParam},
		{"clip lo > hi", second(Clip(x, 2, 1)), ErrParam},
		{"clip NaN", second(Clip(x, NA, 1)), ErrParam},
		{"add length", second(Add(x, x[:2])), ErrLength},
		{"gt length", second(Gt(x, x[:2])), ErrLength},
		{"spread length", second(Spread(x, nil)), ErrLength},
	} {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: error %v, want %v", tt.name, tt.err, tt.want)
		}
	}
}

func second(_ []float64, err error) error { return err }

// Operations never modify their input.
func TestOperationsPure(t *testing.T) {
	x := []float64{3, NA, -1, 0, 2.5, 7, 7, 7, 1}
	orig := fmt.Sprint(x)
	Dlog(x)
	Ret(x)
	Locf(x)
	Cs0(x)
	Cs1(x)
	Ecs1(x)
	Sign(x)
	Neg(x)
	Abs(x)
	Log(x)
	Exp(x)
	Sqrt(x)
	Inv(x)
	Shift(x, 1)
	Diff(x, 1)
	Rmean(x, 2)
	Rstd(x, 2)
	Wzs(x, 2)
	Vnorm(x, 2)
	Clip(x, 0, 1)
	Div(x, x)
	MulScalar(x, 2)
	if fmt.Sprint(x) != orig {
		t.Errorf("input modified: %v, was %v", x, orig)
	}
}

// Wzs never looks ahead: its value on row t depends only on rows ≤ t.
func TestWzsNoLookAhead(t *testing.T) {
	x := []float64{1, 4, NA, 2, 8, 5, 7, NA, 3, 9, 6}
	full := must(Wzs(x, 3))
	for k := 1; k <= len(x); k++ {
		checkSeries(t, fmt.Sprintf("prefix %d", k), must(Wzs(x[:k], 3)), full[:k], 0)
	}
}
