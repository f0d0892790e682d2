package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/groundgate/groundgate/execution/frame"
)

// panel builds a synthetic panel shaped like fx-fed-h10: cols currencies
// over rows weekdays, geometric random walks with 1% of cells missing and
// every 250th row entirely empty (a holiday). The seed is fixed.
func panel(tb testing.TB, rows, cols int) *frame.Frame {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	dates := make([]frame.Date, rows)
	for i := range dates {
		dates[i] = frame.Date(i)
	}
	names := make([]string, cols)
	data := make([][]float64, cols)
	for j := range data {
		names[j] = fmt.Sprintf("CCY%02d", j)
		c := make([]float64, rows)
		level := 1 + rng.Float64()*100
		for i := range c {
			level *= math.Exp(rng.NormFloat64() * 0.006)
			c[i] = level
			if i%250 == 249 || rng.IntN(100) == 0 {
				c[i] = math.NaN()
			}
		}
		data[j] = c
	}
	f, err := frame.New(dates, names, data)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

func benchFamily(b *testing.B, family string, window int) {
	f := panel(b, 10000, 30)
	p := DefaultParams()
	p.Window = window
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := RunFamily(family, f, p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(10000*30), "ns/cell")
}

// BenchmarkMomWZS: 30 columns × 10,000 rows, signal window 60, risk window 60.
func BenchmarkMomWZS(b *testing.B) { benchFamily(b, "MOM_WZS", 60) }

// BenchmarkMomWZS250: the same with a 250-row signal window.
func BenchmarkMomWZS250(b *testing.B) { benchFamily(b, "MOM_WZS", 250) }

func BenchmarkVolTgt(b *testing.B) { benchFamily(b, "VOL_TGT", 0) }

func BenchmarkCarry(b *testing.B) {
	f := panel(b, 10000, 2)
	f, _ = f.Select("CCY00", "CCY01")
	p := DefaultParams()
	p.Window, p.Front, p.Next = 60, "CCY00", "CCY01"
	for b.Loop() {
		if _, err := Carry(f, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMetrics scores a 10,000-row, 30-asset MOM_WZS result with each
// metric.
func BenchmarkMetrics(b *testing.B) {
	f := panel(b, 10000, 30)
	res, err := MomWZS(f, params(60))
	if err != nil {
		b.Fatal(err)
	}
	start := CommonStart(res.PnL)
	for _, m := range Metrics() {
		b.Run(m.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Evaluate(m.Name, res.PnL, res.Weights, start); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWzs(b *testing.B) {
	x := panel(b, 10000, 1).Column(0)
	for b.Loop() {
		Wzs(x, 60)
	}
}

// BenchmarkRolling times the windowed kernels a family runs on one
// 10,000-row column, for short and long windows; ns/window-value is the
// time per value of every window (rows × w).
func BenchmarkRolling(b *testing.B) {
	x := Cs0(Dlog(panel(b, 10000, 1).Column(0)))
	for _, w := range []int{20, 250} {
		for _, k := range []struct {
			name string
			fn   func([]float64, int) ([]float64, error)
		}{{"wzs", Wzs}, {"trailing_vol", TrailingVol}, {"rmean", Rmean}} {
			b.Run(fmt.Sprintf("%s/w=%d", k.name, w), func(b *testing.B) {
				for b.Loop() {
					if _, err := k.fn(x, w); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(x)*w), "ns/window-value")
			})
		}
	}
}

// BenchmarkSize times the sizing step of a family (weights and portfolio
// P&L) on the 30-column, 10,000-row panel.
func BenchmarkSize(b *testing.B) {
	f := panel(b, 10000, 30)
	var returns, signals, vols [][]float64
	for j := range f.Width() {
		r := Dlog(f.Column(j))
		returns = append(returns, r)
		signals = append(signals, momentumSignal(f.Column(j), 60))
		vols = append(vols, trailingVol(r, 60))
	}
	p := DefaultParams()
	p.Leverage = 0.5
	for b.Loop() {
		if _, err := Size(returns, signals, vols, p); err != nil {
			b.Fatal(err)
		}
	}
}
