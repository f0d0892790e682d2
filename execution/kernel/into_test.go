package kernel

import (
	"errors"
	"math"
	"testing"
)

// TestIntoFormsMatch: every Into form, given a series full of garbage,
// overwrites all of it with bit for bit what the allocating form returns,
// and refuses an output of the wrong length.
func TestIntoFormsMatch(t *testing.T) {
	f := loadReal(t, "ffn-test-data.csv")
	dirty := func(n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(0x7FF8DEADBEEF0000 + uint64(i)) // NaNs no kernel writes
			if i%3 == 0 {
				out[i] = 12345
			}
		}
		return out
	}
	for j := range f.Width() {
		price := f.Column(j)
		r := Dlog(price)
		x := Cs0(r)
		cases := []struct {
			name string
			into func(out []float64) error
			want []float64
		}{
			{"dlog", func(out []float64) error { return DlogInto(out, price) }, Dlog(price)},
			{"cs0", func(out []float64) error { return Cs0Into(out, r) }, Cs0(r)},
		}
		for _, b := range [][2]float64{{-1, 1}, {0, 1}} {
			want, _ := Clip(x, b[0], b[1])
			cases = append(cases, struct {
				name string
				into func(out []float64) error
				want []float64
			}{"clip", func(out []float64) error { return ClipInto(out, x, b[0], b[1]) }, want})
		}
		for _, w := range []int{2, 5, 60, 700} {
			for _, k := range []struct {
				name  string
				alloc func([]float64, int) ([]float64, error)
				into  func(out, x []float64, w int) error
			}{{"rmean", Rmean, RmeanInto}, {"rstd", Rstd, RstdInto}, {"wzs", Wzs, WzsInto}, {"vnorm", Vnorm, VnormInto}, {"trailing vol", TrailingVol, TrailingVolInto}} {
				want, err := k.alloc(x, w)
				if err != nil {
					t.Fatal(err)
				}
				cases = append(cases, struct {
					name string
					into func(out []float64) error
					want []float64
				}{k.name, func(out []float64) error { return k.into(out, x, w) }, want})
			}
		}
		for _, c := range cases {
			out := dirty(len(c.want))
			if err := c.into(out); err != nil {
				t.Fatalf("column %d %s: %v", j, c.name, err)
			}
			if i, ok := bitsEqual(out, c.want); !ok {
				t.Fatalf("column %d %s: row %d: %v, allocating form %v", j, c.name, i, out[i], c.want[i])
			}
			if err := c.into(make([]float64, len(c.want)+1)); !errors.Is(err, ErrLength) {
				t.Fatalf("column %d %s: an output one row too long: %v, want ErrLength", j, c.name, err)
			}
		}
	}

	// SizeInto
	prices := [][]float64{f.Column(0), f.Column(1)}
	var returns, signals, vols [][]float64
	for _, p := range prices {
		r := Dlog(p)
		returns = append(returns, r)
		signals = append(signals, momentumSignal(p, 20))
		vols = append(vols, trailingVol(r, 60))
	}
	p := DefaultParams()
	want, err := Size(returns, signals, vols, p)
	if err != nil {
		t.Fatal(err)
	}
	weights := [][]float64{dirty(len(returns[0])), dirty(len(returns[0]))}
	got, err := SizeInto(weights, returns, signals, vols, p)
	if err != nil {
		t.Fatal(err)
	}
	for a := range weights {
		if &got.Weights[a][0] != &weights[a][0] {
			t.Fatalf("asset %d: the weights are not the series given", a)
		}
		if i, ok := bitsEqual(got.Weights[a], want.Weights[a]); !ok {
			t.Fatalf("asset %d: weight %d: %v, Size %v", a, i, got.Weights[a][i], want.Weights[a][i])
		}
	}
	if i, ok := bitsEqual(got.PnL, want.PnL); !ok {
		t.Fatalf("P&L row %d: %v, Size %v", i, got.PnL[i], want.PnL[i])
	}
	if _, err := SizeInto(weights[:1], returns, signals, vols, p); !errors.Is(err, ErrLength) {
		t.Fatalf("one weights series for two assets: %v, want ErrLength", err)
	}
}
