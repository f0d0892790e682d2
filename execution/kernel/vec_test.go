package kernel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The vector loops (elem_amd64.s, windowt_amd64.s; the Go loops alone with
// -tags purego or off amd64) against one value at a time, on every length
// around the vector widths and on values of every kind: NA (two NaN
// payloads), both zeros, infinities, subnormals, huge values and repeats.

// specialValue draws from values that take every branch of the loops.
func specialValue(rng *rand.Rand) float64 {
	switch rng.IntN(14) {
	case 0:
		return NA
	case 1:
		return math.Float64frombits(0xFFF8000000000000) // the processor's default NaN
	case 2:
		return 0
	case 3:
		return math.Copysign(0, -1)
	case 4:
		return []float64{math.Inf(1), math.Inf(-1)}[rng.IntN(2)]
	case 5:
		return []float64{5e-324, -2.2e-308, 1e300, -1e300}[rng.IntN(4)]
	case 6, 7:
		return 0.25 // repeats
	}
	return rng.NormFloat64()
}

func specialSeries(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = specialValue(rng)
	}
	return x
}

// equalOrBothNaN reports the first index where a and b differ in their
// bits, but for NaNs made by arithmetic on NaN or infinite operands (whose
// payload is the processor's): those need only both be NaN.
func equalOrBothNaN(a, b []float64) (int, bool) {
	return bitsEqualNaN(a, b)
}

func TestWindowValuesMatchOneAtATime(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 43))
	for trial := range 400 {
		n := rng.IntN(40)
		next, mean, std := specialSeries(rng, n+rng.IntN(2)), specialSeries(rng, n), specialSeries(rng, n)
		for i := range std {
			if rng.IntN(4) == 0 {
				std[i] = 0
			}
		}
		for _, kind := range []rollKind{rollWzs, rollVnorm, rollVol} {
			m, s := append([]float64(nil), mean...), append([]float64(nil), std...)
			got := windowValues(kind, next, m, s)
			var want []float64
			for e := range min(len(next), n) {
				if kind == rollVol {
					break
				}
				z := next[e] / (std[e] * sqrt252)
				if kind == rollWzs {
					z = (next[e] - mean[e]) / std[e]
				}
				if std[e] == 0 {
					z = nan
				}
				want = append(want, z)
			}
			if kind == rollVol {
				for _, v := range std {
					want = append(want, v*sqrt252)
				}
			}
			if i, ok := bitsEqual(got, want); !ok {
				t.Fatalf("trial %d kind %d: window %d: %v, one at a time %v", trial, kind, i, got[i], want[i])
			}
		}
	}
}

func TestExposureMatchesOneAtATime(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 53))
	for trial := range 400 {
		n := rng.IntN(40)
		var got, want Exposure
		gotGross, wantGross := make([]float64, n), make([]float64, n)
		for range 1 + rng.IntN(3) {
			w := specialSeries(rng, n)
			got.Add(w, gotGross)
			prev := 0.0
			for t, v := range w {
				prev = want.add(v, prev, &wantGross[t])
			}
		}
		if got.Defined != want.Defined || got.Finite != want.Finite ||
			math.Float64bits(got.MaxAbs) != math.Float64bits(want.MaxAbs) || !sameBitsOrNaN(got.Moved, want.Moved) {
			t.Fatalf("trial %d: %+v, one at a time %+v", trial, got, want)
		}
		if i, ok := equalOrBothNaN(gotGross, wantGross); !ok {
			t.Fatalf("trial %d: gross %d: %v, one at a time %v", trial, i, gotGross[i], wantGross[i])
		}
	}
}

func sameBitsOrNaN(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (isNA(a) && isNA(b))
}

func TestRangeMatchesInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(59, 61))
	for trial := range 1000 {
		var series [][]float64
		for range rng.IntN(4) {
			x := specialSeries(rng, rng.IntN(30))
			if trial%3 == 0 { // no zero: the vector path's answer stands
				for i, v := range x {
					if v == 0 {
						x[i] = 1.5
					}
				}
			}
			series = append(series, x)
		}
		lo, hi := Range(series...)
		wlo, whi := rangeInOrder(series)
		if math.Float64bits(lo) != math.Float64bits(wlo) || math.Float64bits(hi) != math.Float64bits(whi) {
			t.Fatalf("trial %d: %v %v, in order %v %v", trial, lo, hi, wlo, whi)
		}
	}
}

func TestNARowsAndFirstRepeat(t *testing.T) {
	rng := rand.New(rand.NewPCG(67, 71))
	for trial := range 2000 {
		x := make([]float64, rng.IntN(60))
		for i := range x {
			x[i] = float64(i)
		}
		for range rng.IntN(4) * rng.IntN(8) { // up to 21 NAs, some in runs
			if len(x) == 0 {
				break
			}
			k := rng.IntN(len(x))
			x[k] = []float64{NA, math.Float64frombits(0xFFF8000000000000)}[rng.IntN(2)]
		}
		if len(x) > 1 && trial%2 == 0 {
			k := 1 + rng.IntN(len(x)-1)
			x[k] = x[k-1]
			if rng.IntN(3) == 0 {
				x[k], x[k-1] = math.Copysign(0, -1), 0 // == as well
			}
		}
		var wantNA []int
		for i, v := range x {
			if isNA(v) {
				wantNA = append(wantNA, i)
			}
		}
		wantRep := max(len(x), 1)
		for i := 1; i < len(x); i++ {
			if x[i] == x[i-1] {
				wantRep = i
				break
			}
		}
		n := rng.IntN(3)
		start := make([]int, n, n+rng.IntN(6)) // appended to, from any capacity
		got := naRows(x, start)
		if len(got) != n+len(wantNA) || !slices.Equal(got[n:], wantNA) {
			t.Fatalf("trial %d: naRows(%v) = %v, want %v after %d", trial, x, got, wantNA, n)
		}
		if got := firstRepeat(x); got != wantRep {
			t.Fatalf("trial %d: firstRepeat(%v) = %d, want %d", trial, x, got, wantRep)
		}
	}
}
