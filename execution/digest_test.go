package execution

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/zeebo/blake3"

	"github.com/groundgate/groundgate/execution/kernel"
	"github.com/groundgate/groundgate/hashing"
)

// refValueDigest is valueDigest as first written: one 8-byte write per
// value.
func refValueDigest(v rval, constant Arg) hashing.Digest {
	h := blake3.New()
	var b [8]byte
	num := func(x float64) {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(canonNaN(x)))
		h.Write(b[:])
	}
	col := func(name string, xs []float64) {
		binary.LittleEndian.PutUint64(b[:], uint64(len(name)))
		h.Write(b[:])
		h.Write([]byte(name))
		binary.LittleEndian.PutUint64(b[:], uint64(len(xs)))
		h.Write(b[:])
		for _, x := range xs {
			num(x)
		}
	}
	switch {
	case v.p != nil:
		h.Write([]byte("series\n"))
		for j, c := range v.p.cols {
			name := ""
			if j < len(v.p.names) {
				name = v.p.names[j]
			}
			col(name, c)
		}
	case v.res != nil:
		h.Write([]byte("pnl\n"))
		col("pnl", v.res.PnL)
		for j, w := range v.res.Weights {
			col(fmt.Sprint("weights/", j), w)
		}
	default:
		h.Write([]byte("const\n" + constant.String()))
	}
	return hashing.New(hashing.BLAKE3, h.Sum(nil))
}

// TestValueDigestBlocks: hashing a step's values a block at a time gives
// the digests of one write per value, for series shorter and longer than
// a block, NaNs of any payload, results and constants.
func TestValueDigestBlocks(t *testing.T) {
	series := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = math.Sin(float64(i)) * 1e3
			if i%7 == 3 {
				x[i] = math.Float64frombits(0x7FF8000000000000 | uint64(i)) // NaN, any payload
			}
		}
		return x
	}
	var cases []rval
	for _, n := range []int{0, 1, 511, 512, 513, 1500, 10000} {
		cases = append(cases,
			rval{p: &panel{names: []string{"a", "b"}, cols: [][]float64{series(n), series(n + 1)}}},
			rval{res: &kernel.Result{PnL: series(n), Weights: [][]float64{series(n), series(n)}}})
	}
	c := 2.5
	cases = append(cases, rval{})
	for i, v := range cases {
		if got, want := valueDigest(v, Arg{Num: &c}), refValueDigest(v, Arg{Num: &c}); got != want {
			t.Fatalf("case %d: %s, one write per value %s", i, got, want)
		}
	}
}

// refSignalRange is signalRange's scan as first written.
func refSignalRange(cols [][]float64) (lo, hi float64) {
	lo, hi = math.NaN(), math.NaN()
	for _, col := range cols {
		for _, v := range col {
			if math.IsNaN(v) {
				continue
			}
			if math.IsNaN(lo) || v < lo {
				lo = v
			}
			if math.IsNaN(hi) || v > hi {
				hi = v
			}
		}
	}
	return lo, hi
}

// TestSignalRangeMatchesReference: the signal's range, scanned without a
// NaN test per value, is the first scan's bit for bit: leading NaN
// columns, zeros of both signs first or later, infinities.
func TestSignalRangeMatchesReference(t *testing.T) {
	cp := &compiled{plan: Plan{Nodes: []Node{{Op: "input"}, {Op: "volsize", Args: []Arg{nodeArg(0)}}}, Output: 1}}
	nz := math.Copysign(0, -1)
	nan := math.NaN()
	cases := [][][]float64{
		{},
		{{nan, nan}, {nan}},
		{{nan, nz, 0, nan}, {0.5, -0.25}},
		{{0, nz}, {nz, 0}},
		{{nan}, {nz, nan, 0}, {math.Inf(1), -3}},
		{{nan, 1, nan, -1}, {}, {math.Inf(-1)}},
	}
	for i, cols := range cases {
		vals := []rval{{p: &panel{cols: cols}}, {}}
		lo, hi := signalRange(cp, vals)
		wlo, whi := refSignalRange(cols)
		if math.Float64bits(lo) != math.Float64bits(wlo) || math.Float64bits(hi) != math.Float64bits(whi) {
			t.Fatalf("case %d: [%v, %v], first scan [%v, %v]", i, lo, hi, wlo, whi)
		}
	}
}
