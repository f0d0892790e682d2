package kernel

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/groundgate/groundgate/execution/frame"
)

// realData is ../testdata, shared by the frame and kernel tests.
const realData = "../testdata"

func loadReal(t testing.TB, name string) *frame.Frame {
	t.Helper()
	f, err := frame.LoadFile(filepath.Join(realData, name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustFrame(t testing.TB, names []string, cols ...[]float64) *frame.Frame {
	t.Helper()
	dates := make([]frame.Date, len(cols[0]))
	for i := range dates {
		dates[i] = frame.Date(19000 + i)
	}
	f, err := frame.New(dates, names, cols)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func params(window int) Params {
	p := DefaultParams()
	p.Window = window
	return p
}

// The hand-checked family example. Prices are exp of a log path, so the
// returns are r = [NA, 0.1, −0.1, 0.2, 0, 0.1] (to rounding):
//
//	A = [1, e^0.1, 1, e^0.2, e^0.2, e^0.3]
//
// With risk window 2, τ = 0.10, L = 1, lag 1, σ̂_t uses the 2 valid returns
// before t:
//
//	row 3: {0.1, −0.1}: sd = √(0.02/1) = 0.141421…, σ̂ = sd·√252 = 2.24499443…
//	row 4: {−0.1, 0.2}: mean 0.05, sd = √(2·0.15²) = √0.045, σ̂ = 3.36749165…
//	row 5: {0.2, 0}: σ̂ = 2.24499443…
//
// VOL_TGT (sig = 1): w = 0.1/σ̂ = [NA, NA, NA, 0.0445435…, 0.0296957…, 0.0445435…]
// P&L: row 4 = w_3·r_4 = 0; row 5 = w_4·r_5 = 0.0296957…·0.1.
//
// MOM_WZS, window 2: cs0(r) = [NA, 0.1, 0, 0.2, 0.2, 0.3];
//
//	row 3: z = (0.2 − 0.05)/√0.005 = 2.12… → clipped to 1
//	row 4: z = (0.2 − 0.1)/√0.02 = 0.7071…
//	row 5: the window {0.2, 0.2} is flat: s = 0, NA
//
// w = [NA, NA, NA, 0.1/σ̂_3, 0.7071…·0.1/σ̂_4, NA]; P&L row 5 = w_4·0.1.
var (
	famA   = []float64{1, math.Exp(0.1), 1, math.Exp(0.2), math.Exp(0.2), math.Exp(0.3)}
	sigLo  = math.Sqrt(0.02) * math.Sqrt(252)
	sigHi  = math.Sqrt(0.045) * math.Sqrt(252)
	handVT = []float64{NA, NA, NA, 0.1 / sigLo, 0.1 / sigHi, 0.1 / sigLo}
)

func handParams() Params {
	p := params(2)
	p.RiskWindow = 2
	return p
}

func TestVolTgtHand(t *testing.T) {
	f := mustFrame(t, []string{"A"}, famA)
	res, err := VolTgt(f, handParams())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Assets) != 1 || res.Assets[0] != "A" {
		t.Errorf("assets %v", res.Assets)
	}
	checkSeries(t, "weights", res.Weights[0], handVT, 1e-12)
	checkSeries(t, "pnl", res.PnL, []float64{NA, NA, NA, NA, 0, 0.1 / sigHi * 0.1}, 1e-12)
	if math.Abs(res.PnL[4]) > 1e-15 {
		t.Errorf("row 4 P&L = %v, want 0", res.PnL[4])
	}
}

// Two assets; B misses row 4. Its return on row 4 is NA and on row 5 is
// ln e^0.3 − ln e^0.2 = 0.1 (p skips the NA row). σ̂_B on row 5 uses the
// last 2 valid returns, {−0.1, 0.2}: σ̂ = 3.3674…. VOL_TGT's B weight is
// defined on row 4 (sig = 1 on every row, σ̂ exists) although r_4 is NA.
//
//	P&L_A = [.., 0, 0.1/σ̂hi·0.1]; P&L_B = [.., NA, 0.1/σ̂hi·0.1]
//	portfolio row 4 = mean{0} = 0; row 5 = mean{a, a} = a.
func TestPortfolioMean(t *testing.T) {
	b := append([]float64(nil), famA...)
	b[4] = NA
	f := mustFrame(t, []string{"A", "B"}, famA, b)
	res, err := VolTgt(f, handParams())
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "weights A", res.Weights[0], handVT, 1e-12)
	checkSeries(t, "weights B", res.Weights[1], []float64{NA, NA, NA, 0.1 / sigLo, 0.1 / sigHi, 0.1 / sigHi}, 1e-12)
	checkSeries(t, "pnl", res.PnL, []float64{NA, NA, NA, NA, 0, 0.1 / sigHi * 0.1}, 1e-12)

	// Lag 2: P&L_t = w_{t−2}·r_t: row 5 = w_3·r_5 for both assets.
	p := handParams()
	p.Lag = 2
	res, err = VolTgt(f, p)
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "pnl lag 2", res.PnL, []float64{NA, NA, NA, NA, NA, 0.1 / sigLo * 0.1}, 1e-12)
}

func TestMomentumHand(t *testing.T) {
	f := mustFrame(t, []string{"A"}, famA)
	z4 := 0.1 / math.Sqrt(0.02)
	wantW := []float64{NA, NA, NA, 0.1 / sigLo, z4 * 0.1 / sigHi, NA}
	res, err := MomWZS(f, handParams())
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "MOM_WZS weights", res.Weights[0], wantW, 1e-9)
	checkSeries(t, "MOM_WZS pnl", res.PnL, []float64{NA, NA, NA, NA, 0, z4 * 0.1 / sigHi * 0.1}, 1e-9)

	rev, err := MomRev(f, handParams())
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "MOM_REV weights", rev.Weights[0], Neg(wantW), 1e-9)

	// Leverage 0.03 binds on row 3 (0.0445) but not row 4 (0.0210).
	p := handParams()
	p.Leverage = 0.03
	res, err = MomWZS(f, p)
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "MOM_WZS L=0.03", res.Weights[0], []float64{NA, NA, NA, 0.03, z4 * 0.1 / sigHi, NA}, 1e-9)
}

// CARRY: front = famA, next = front·e^−c with c = [0.1, 0.3, 0.2, 0.4, 0.6, NA]
// (next missing on row 5). wzs(c, 2):
//
//	row 2: {0.1, 0.3}: m 0.2, so z = 0
//	row 3: {0.3, 0.2}: (0.4 − 0.25)/√0.005 = 2.12 → 1
//	row 4: {0.2, 0.4}: (0.6 − 0.3)/√0.02 = 2.12 → 1
//
// σ̂ on the front as for VOL_TGT; row 2 has only one return before it.
// w = [NA, NA, NA, 0.1/σ̂lo, 0.1/σ̂hi, NA]; P&L row 5 = w_4·0.1.
func TestCarryHand(t *testing.T) {
	c := []float64{0.1, 0.3, 0.2, 0.4, 0.6}
	next := make([]float64, len(famA))
	for i := range next {
		next[i] = NA
		if i < len(c) {
			next[i] = famA[i] * math.Exp(-c[i])
		}
	}
	other := []float64{1, 2, 3, 4, 5, 6}
	f := mustFrame(t, []string{"X", "C1", "C2"}, other, famA, next)
	res, err := Carry(f, handParams())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Assets) != 1 || res.Assets[0] != "C1" || len(res.Weights) != 1 {
		t.Fatalf("carry trades %v", res.Assets)
	}
	checkSeries(t, "CARRY weights", res.Weights[0], []float64{NA, NA, NA, 0.1 / sigLo, 0.1 / sigHi, NA}, 1e-9)
	checkSeries(t, "CARRY pnl", res.PnL, []float64{NA, NA, NA, NA, 0, 0.1 / sigHi * 0.1}, 1e-9)

	// Named columns; a negative next price makes c NA there.
	next[3] = -1
	f = mustFrame(t, []string{"F", "N"}, famA, next)
	p := handParams()
	p.Front, p.Next = "F", "N"
	res, err = Carry(f, p)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(res.Weights[0][3]) {
		t.Errorf("weight with a negative next price = %v, want NA", res.Weights[0][3])
	}
}

func TestFamilyErrors(t *testing.T) {
	f := mustFrame(t, []string{"C1", "C2"}, famA, famA)
	bad := func(edit func(*Params)) Params {
		p := params(20)
		edit(&p)
		return p
	}
	for _, tt := range []struct {
		name   string
		family string
		p      Params
		want   error
	}{
		{"window 1", "MOM_WZS", bad(func(p *Params) { p.Window = 1 }), ErrParam},
		{"window 0 carry", "CARRY", bad(func(p *Params) { p.Window = 0 }), ErrParam},
		{"risk window 1", "VOL_TGT", bad(func(p *Params) { p.RiskWindow = 1 }), ErrParam},
		{"leverage 0", "MOM_REV", bad(func(p *Params) { p.Leverage = 0 }), ErrParam},
		{"leverage Inf", "MOM_REV", bad(func(p *Params) { p.Leverage = math.Inf(1) }), ErrParam},
		{"leverage NaN", "MOM_REV", bad(func(p *Params) { p.Leverage = NA }), ErrParam},
		{"target vol 0", "VOL_TGT", bad(func(p *Params) { p.TargetVol = 0 }), ErrParam},
		{"target vol negative", "VOL_TGT", bad(func(p *Params) { p.TargetVol = -0.1 }), ErrParam},
		{"lag 0", "MOM_WZS", bad(func(p *Params) { p.Lag = 0 }), ErrParam},
		{"front missing", "CARRY", bad(func(p *Params) { p.Front = "F" }), ErrColumn},
		{"next missing", "CARRY", bad(func(p *Params) { p.Next = "C3" }), ErrColumn},
		{"front = next", "CARRY", bad(func(p *Params) { p.Next = "C1" }), ErrParam},
		{"unknown family", "TREND", params(20), ErrUnknown},
	} {
		if _, err := RunFamily(tt.family, f, tt.p); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	// VOL_TGT does not use the window.
	if _, err := RunFamily("VOL_TGT", f, bad(func(p *Params) { p.Window = 0 })); err != nil {
		t.Errorf("VOL_TGT without a window: %v", err)
	}
	if _, err := VolTgt(&frame.Frame{}, params(20)); !errors.Is(err, ErrColumn) {
		t.Errorf("empty frame: %v", err)
	}
	if _, err := Backtest([][]float64{{1, 2}}, [][]float64{{1}}, params(2)); !errors.Is(err, ErrLength) {
		t.Errorf("Backtest ragged: %v", err)
	}
	if _, err := Backtest([][]float64{{1, 2}}, nil, params(2)); !errors.Is(err, ErrLength) {
		t.Errorf("Backtest without signals: %v", err)
	}
	if got := Families(); fmt.Sprint(got) != "[MOM_WZS MOM_REV CARRY VOL_TGT]" {
		t.Errorf("Families() = %v", got)
	}
}

// sameBits compares two series bit for bit, except that any NaN equals any
// NaN.
func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.IsNaN(a[i]) && math.IsNaN(b[i]) {
			continue
		}
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// sameValues compares with ==, except that NaN equals NaN (so −0 = +0).
func sameValues(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

// MOM_WZS and MOM_REV differ only in orientation: with a leverage cap that
// never binds, their weights and P&Ls are exact negatives, on real data.
func TestMomentumOrientationRealData(t *testing.T) {
	for _, file := range []string{"ffn-test-data.csv", "crude-oil-wti-cushing.csv", "wti-daily.csv"} {
		f := loadReal(t, file)
		for _, w := range []int{5, 20, 120} {
			p := params(w)
			p.Leverage = 1e12
			mom, err := MomWZS(f, p)
			if err != nil {
				t.Fatal(err)
			}
			rev, err := MomRev(f, p)
			if err != nil {
				t.Fatal(err)
			}
			defined := 0
			for a := range mom.Weights {
				if !sameBits(rev.Weights[a], Neg(mom.Weights[a])) {
					t.Errorf("%s w=%d asset %s: MOM_REV weights are not the exact negatives of MOM_WZS's", file, w, mom.Assets[a])
				}
				for _, v := range mom.Weights[a] {
					if !math.IsNaN(v) && math.Abs(v) > 1 {
						defined++ // |w| > 1: the default cap would have bound
					}
				}
			}
			// The P&L is a sum: x + (−x) is +0 in IEEE arithmetic whichever
			// the order, so a zero P&L may carry either sign; compare with ==.
			if !sameValues(rev.PnL, Neg(mom.PnL)) {
				t.Errorf("%s w=%d: MOM_REV P&L is not the exact negative of MOM_WZS's", file, w)
			}
			if CommonStart(mom.PnL) < 0 {
				t.Errorf("%s w=%d: no P&L at all", file, w)
			}
			t.Logf("%s w=%d: %d weights beyond ±1 (unclipped)", file, w, defined)
		}
	}
}

// The negative WTI price (2020-04-20, -36.98) makes dlog NA on that row and
// the next; the families carry on around it.
func TestNegativeWTI(t *testing.T) {
	f := loadReal(t, "wti-daily.csv")
	var neg int = -1
	for i, d := range f.Dates() {
		if d.String() == "2020-04-20" {
			neg = i
		}
	}
	if neg < 0 || f.Column(0)[neg] != -36.98 {
		t.Fatalf("2020-04-20 not found or not -36.98")
	}
	r := Dlog(f.Column(0))
	if !math.IsNaN(r[neg]) || !math.IsNaN(r[neg+1]) {
		t.Errorf("dlog on 2020-04-20, -21 = %v, %v; want NA, NA", r[neg], r[neg+1])
	}
	if math.IsNaN(r[neg-1]) || math.IsNaN(r[neg+2]) {
		t.Errorf("dlog around the negative price should be defined: %v, %v", r[neg-1], r[neg+2])
	}
	for _, fam := range []string{"MOM_WZS", "MOM_REV", "VOL_TGT"} {
		res, err := RunFamily(fam, f, params(20))
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(res.PnL[neg]) || !math.IsNaN(res.PnL[neg+1]) {
			t.Errorf("%s: P&L on the NA-return rows = %v, %v", fam, res.PnL[neg], res.PnL[neg+1])
		}
		if math.IsNaN(res.PnL[neg+5]) && fam == "VOL_TGT" {
			t.Errorf("%s: no P&L after the negative price", fam)
		}
		for _, v := range res.PnL {
			if math.IsInf(v, 0) {
				t.Fatalf("%s: infinite P&L", fam)
			}
		}
	}
}

// Weights never exceed the leverage cap; no family looks ahead: running on
// a prefix of the frame gives the same weights and P&L on that prefix.
func TestFamiliesRealDataInvariants(t *testing.T) {
	cases := []struct {
		file, family string
	}{
		{"ffn-test-data.csv", "MOM_WZS"},
		{"ffn-test-data.csv", "VOL_TGT"},
		{"crude-oil-wti-cushing.csv", "CARRY"},
		{"crude-oil-wti-cushing.csv", "MOM_REV"},
		{"natural-gas-daily.csv", "VOL_TGT"},
	}
	for _, c := range cases {
		f := loadReal(t, c.file)
		p := params(40)
		p.Leverage = 0.5
		full, err := RunFamily(c.family, f, p)
		if err != nil {
			t.Fatal(err)
		}
		for a, w := range full.Weights {
			for i, v := range w {
				if math.Abs(v) > p.Leverage {
					t.Fatalf("%s %s asset %d row %d: |w| = %v > L", c.file, c.family, a, i, v)
				}
			}
		}
		for _, k := range []int{100, 1500, f.Len() / 2} {
			names := f.Names()
			cols := make([][]float64, f.Width())
			for j := range cols {
				cols[j] = f.Column(j)[:k]
			}
			pre, err := frame.New(f.Dates()[:k], names, cols)
			if err != nil {
				t.Fatal(err)
			}
			part, err := RunFamily(c.family, pre, p)
			if err != nil {
				t.Fatal(err)
			}
			for a := range part.Weights {
				if !sameBits(part.Weights[a], full.Weights[a][:k]) {
					t.Errorf("%s %s: weights on the first %d rows depend on later rows", c.file, c.family, k)
				}
			}
			if !sameBits(part.PnL, full.PnL[:k]) {
				t.Errorf("%s %s: P&L on the first %d rows depends on later rows", c.file, c.family, k)
			}
		}
	}
}

// Determinism: two runs give identical bits.
func TestFamiliesDeterministic(t *testing.T) {
	f := loadReal(t, "crude-oil-wti-cushing.csv")
	for _, fam := range Families() {
		a, err := RunFamily(fam, f, params(30))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := RunFamily(fam, f, params(30))
		if !sameBits(a.PnL, b.PnL) {
			t.Errorf("%s: two runs differ", fam)
		}
	}
}
