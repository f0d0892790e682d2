package kernel

import (
	"errors"
	"math"
	"testing"
)

// metricPnL is the hand vector for the metrics. Its valid values are
// v = [0.01, −0.02, 0.03, 0, −0.01], n = 5:
//
//	Σ v = 0.01, mean = 0.002
//	deviations 0.008, −0.022, 0.028, −0.002, −0.012
//	squares 6.4e-5 + 4.84e-4 + 7.84e-4 + 4e-6 + 1.44e-4 = 1.48e-3
//	sd = √(1.48e-3/4) = √3.7e-4 = 0.0192353840616713
//	SRP  = 0.002/0.0192353840616713 × √252 = 1.65055273297290
//	ARET = 0.002 × 252 = 0.504
//	AVOL = 0.0192353840616713 × 15.8745078663875 = 0.305352255599987
//	SRT: min(v,0)² = 0, 4e-4, 0, 0, 1e-4; mean 1e-4; √ = 0.01;
//	     0.002/0.01 × √252 = 3.17490157327751
//	MDD: cumsum 0.01, −0.01, 0.02, 0.02, 0.01; peak e^0.01 then e^0.02;
//	     drawdowns 0, 1 − e^−0.02, 0, 0, 1 − e^−0.01; max 1 − e^−0.02 = 0.0198013266932447
//	CLM  = 0.504/0.0198013266932447 = 25.4528399944
//	HIT  = #{0.01, 0.03}/#{0.01, −0.02, 0.03, −0.01} = 2/4 = 0.5
//	TRET = 0.01
var metricPnL = []float64{0.01, -0.02, NA, 0.03, 0, -0.01}

// metricWeights are two assets' weights, row-aligned with metricPnL.
// Turnover per row, NA weights as 0 and the weight before row 0 as 0:
//
//	row 0: |0 − 0| + |0.2 − 0| = 0.2
//	row 1: |0.5 − 0| + |0.2 − 0.2| = 0.5
//	row 2: skipped (the P&L is NA)
//	row 3: |−0.5 − 0.5| + |0.1 − 0| = 1.1
//	row 4: |0 − (−0.5)| + |0.1 − 0.1| = 0.5
//	row 5: |1 − 0| + 0 = 1
//
// TRN from row 0 = (0.2 + 0.5 + 1.1 + 0.5 + 1)/5 = 0.66; from row 1 =
// (0.5 + 1.1 + 0.5 + 1)/4 = 0.775.
var metricWeights = [][]float64{
	{NA, 0.5, 0.5, -0.5, NA, 1},
	{0.2, 0.2, NA, 0.1, 0.1, 0.1},
}

func TestMetricsHandVector(t *testing.T) {
	tests := []struct {
		name string
		want float64
		rel  float64
	}{
		{"SRP", 1.65055273297290, 1e-13},
		{"MDD", 0.0198013266932447, 1e-13},
		{"ARET", 0.504, 1e-15},
		{"AVOL", 0.305352255599987, 1e-13},
		{"SRT", 3.17490157327751, 1e-13},
		{"CLM", 25.4528399944, 1e-11},
		{"HIT", 0.5, 0},
		{"TRN", 0.66, 1e-15},
		{"TRET", 0.01, 1e-15},
	}
	for _, tt := range tests {
		got, err := Evaluate(tt.name, metricPnL, metricWeights, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !closeTo(got, tt.want, tt.rel) {
			t.Errorf("%s = %.17g, want %.17g", tt.name, got, tt.want)
		}
	}
	// Exact expressions, to the last bits.
	exact := map[string]float64{
		"SRP":  0.002 / math.Sqrt(3.7e-4) * math.Sqrt(252),
		"AVOL": math.Sqrt(3.7e-4) * math.Sqrt(252),
		"MDD":  1 - math.Exp(-0.02),
		"SRT":  0.2 * math.Sqrt(252),
	}
	for _, name := range []string{"SRP", "AVOL", "MDD", "SRT"} {
		got, _ := Evaluate(name, metricPnL, metricWeights, 0)
		if !closeTo(got, exact[name], 1e-14) {
			t.Errorf("%s = %.17g, want %.17g", name, got, exact[name])
		}
	}
	if got, _ := Evaluate("TRN", metricPnL, metricWeights, 1); !closeTo(got, 0.775, 1e-15) {
		t.Errorf("TRN from row 1 = %v, want 0.775", got)
	}
}

func TestMetricEdgeCases(t *testing.T) {
	zeros := []float64{0, 0, NA, 0}
	rising := []float64{0.01, 0.02, 0.01}
	falling := []float64{-0.01, -0.02}
	one := []float64{NA, 0.05}
	allNA := []float64{NA, NA}
	tests := []struct {
		metric string
		pnl    []float64
		want   float64
	}{
		// A flat P&L: no dispersion, no drawdown, no nonzero day.
		{"SRP", zeros, NA}, {"AVOL", zeros, 0}, {"ARET", zeros, 0}, {"MDD", zeros, 0},
		{"CLM", zeros, NA}, {"HIT", zeros, NA}, {"SRT", zeros, NA}, {"TRET", zeros, 0},
		// E never drops: MDD = 0, so CLM is NA; no negative day: SRT is NA.
		{"MDD", rising, 0}, {"CLM", rising, NA}, {"SRT", rising, NA}, {"HIT", rising, 1},
		// A loss on the first row is not a drawdown (the peak starts there):
		// E = e^−0.01, e^−0.03; MDD = 1 − e^−0.02.
		{"MDD", falling, 1 - math.Exp(-0.02)}, {"HIT", falling, 0},
		// mean −0.015; downside √((1e-4 + 4e-4)/2) = √2.5e-4 = 0.0158113883…
		{"SRT", falling, -0.015 / math.Sqrt(2.5e-4) * math.Sqrt(252)},
		// One value: no sample std.
		{"SRP", one, NA}, {"AVOL", one, NA}, {"ARET", one, 0.05 * 252}, {"TRET", one, 0.05},
		{"MDD", one, 0}, {"SRT", one, NA},
		// Nothing defined.
		{"SRP", allNA, NA}, {"MDD", allNA, NA}, {"ARET", allNA, NA}, {"AVOL", allNA, NA},
		{"SRT", allNA, NA}, {"CLM", allNA, NA}, {"HIT", allNA, NA}, {"TRET", allNA, NA},
		{"TRN", allNA, NA},
	}
	for _, tt := range tests {
		w := [][]float64{make([]float64, len(tt.pnl))}
		got, err := Evaluate(tt.metric, tt.pnl, w, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !closeTo(got, tt.want, 1e-12) {
			t.Errorf("%s(%v) = %v, want %v", tt.metric, tt.pnl, got, tt.want)
		}
	}
}

func TestEvaluateWindow(t *testing.T) {
	pnl := []float64{-0.5, NA, 0.01, 0.02, NA}
	for _, tt := range []struct {
		start int
		want  float64
	}{
		{0, -0.47}, // −0.5 + 0.01 + 0.02
		{2, 0.03},
		{4, NA}, // only an NA row
		{5, NA}, // past the end
		{-1, NA},
	} {
		got, err := Evaluate("TRET", pnl, nil, tt.start)
		if err != nil || !closeTo(got, tt.want, 1e-15) {
			t.Errorf("TRET from %d = %v, %v; want %v", tt.start, got, err, tt.want)
		}
	}
	if _, err := Evaluate("SHARPE", pnl, nil, 0); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown metric: %v", err)
	}
	if _, err := Evaluate("TRN", pnl, [][]float64{{1}}, 0); !errors.Is(err, ErrLength) {
		t.Errorf("short weights: %v", err)
	}
}

func TestCommonStart(t *testing.T) {
	tests := []struct {
		pnls [][]float64
		want int
	}{
		{[][]float64{{NA, 1, 2, 3}, {NA, NA, 1, NA}, {0, 0, 0, 1}}, 2},
		{[][]float64{{NA, 1}, {1, NA}}, -1},
		{[][]float64{{0, 1}}, 0},
		{[][]float64{{NA, 1, 1}, {NA, NA}}, -1}, // the shorter series ends first
		{nil, -1},
	}
	for _, tt := range tests {
		if got := CommonStart(tt.pnls...); got != tt.want {
			t.Errorf("CommonStart(%v) = %d, want %d", tt.pnls, got, tt.want)
		}
	}
}

func TestDirectionsAndBest(t *testing.T) {
	want := map[string]bool{
		"SRP": true, "MDD": false, "ARET": true, "AVOL": false, "SRT": true,
		"CLM": true, "HIT": true, "TRN": false, "TRET": true,
	}
	ms := Metrics()
	if len(ms) != len(want) {
		t.Fatalf("%d metrics, want %d", len(ms), len(want))
	}
	for _, m := range ms {
		if h, ok := want[m.Name]; !ok || h != m.Higher {
			t.Errorf("metric %s higher=%v, want %v (known %v)", m.Name, m.Higher, h, ok)
		}
		if got, err := LookupMetric(m.Name); err != nil || got != m {
			t.Errorf("LookupMetric(%s) = %v, %v", m.Name, got, err)
		}
	}
	if _, err := LookupMetric("srp"); !errors.Is(err, ErrUnknown) {
		t.Errorf("LookupMetric is case-insensitive: %v", err)
	}
	srp, _ := LookupMetric("SRP")
	mdd, _ := LookupMetric("MDD")
	for _, tt := range []struct {
		m      Metric
		scores []float64
		want   int
	}{
		{srp, []float64{1, NA, 3, 3}, 2}, // tie: the earlier wins
		{mdd, []float64{0.2, 0.1, 0.1}, 1},
		{mdd, []float64{NA, 0.3}, 1},
		{srp, []float64{NA, NA}, -1},
		{srp, nil, -1},
		{srp, []float64{-1, -2}, 0},
	} {
		if got := Best(tt.m, tt.scores); got != tt.want {
			t.Errorf("Best(%s, %v) = %d, want %d", tt.m.Name, tt.scores, got, tt.want)
		}
	}
	if !srp.Better(1, NA) || srp.Better(NA, 1) || srp.Better(NA, NA) || !mdd.Better(0.1, 0.2) {
		t.Error("Better")
	}
}

// MDD on the dlog P&L of ffn's test prices, against the values in
// shared/data/README.md (ffn's own tests and an independent computation).
// Over the full file the peak lies well after the first row and the values
// agree. Over the first 10 prices they agree for MSFT and C but not AAPL:
// AAPL's first return is a loss (13.84 → 13.575), which ffn counts as a
// drawdown from the first price (0.086) and DOMAIN.md's definition does not,
// its running peak starting at E of the first P&L row (0.0824).
func TestMDDAgainstFFN(t *testing.T) {
	f := loadReal(t, "ffn-test-data.csv")
	for _, tt := range []struct {
		asset      string
		full, ten  float64
		tenFFNSays float64
	}{
		{"AAPL", 0.6087, 0.0824, 0.086},
		{"MSFT", 0.5912, 0.0485, 0.048},
		{"C", 0.9819, 0.0326, 0.033},
	} {
		price, ok := f.Lookup(tt.asset)
		if !ok {
			t.Fatalf("no column %s", tt.asset)
		}
		r := Dlog(price)
		if got := MDD(r); math.Abs(got-tt.full) > 5e-5 {
			t.Errorf("%s full-period MDD = %.5f, want %.4f", tt.asset, got, tt.full)
		}
		got := MDD(r[:10])
		if math.Abs(got-tt.ten) > 5e-5 {
			t.Errorf("%s MDD over the first 10 prices = %.5f, want %.4f", tt.asset, got, tt.ten)
		}
		t.Logf("%s: MDD over the first 10 prices %.4f (ffn: %.3f)", tt.asset, got, tt.tenFFNSays)
	}
}
