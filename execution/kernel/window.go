package kernel

import "math"

// The inner loops of the rolling statistics: every window's mean, and
// every window's sample standard deviation around its mean. Each window is
// summed on its own, left to right from +0 — exactly as plainMean and
// meanStd sum it, so the result is bit for bit theirs — but many
// consecutive windows are summed in the same loop, each with its own
// accumulator, so that many independent additions are in flight instead
// of one chain waiting on itself. On amd64 with AVX (window_amd64.s) the
// accumulators are the lanes of eight vectors, 32 windows at a time; the
// pure Go loops below do the rest, eight at a time. Both round every
// operation once, the same way.

// windowMeans sets out[e] to the mean of v[e : e+w], for every e <
// len(out); len(v) ≥ len(out)+w−1, w ≥ 1.
func windowMeans(v []float64, w int, out []float64) {
	e := windowMeansVec(v, w, out)
	windowMeansGo(v[e:], w, out[e:])
}

// windowStd sets out[e] to the sample standard deviation of v[e : e+w]
// around mean[e], for every e < len(out); mean is as long as out, w ≥ 2.
func windowStd(v []float64, w int, mean, out []float64) {
	e := windowStdVec(v, w, mean, out)
	windowStdGo(v[e:], w, mean[e:], out[e:])
}

func windowMeansGo(v []float64, w int, out []float64) {
	fw := float64(w)
	e := 0
	for ; e+8 <= len(out); e += 8 {
		var s0, s1, s2, s3, s4, s5, s6, s7 float64
		u := v[e : e+w+7]
		for i := range w {
			x := u[i : i+8 : i+8]
			s0 += x[0]
			s1 += x[1]
			s2 += x[2]
			s3 += x[3]
			s4 += x[4]
			s5 += x[5]
			s6 += x[6]
			s7 += x[7]
		}
		o := out[e : e+8 : e+8]
		o[0], o[1], o[2], o[3] = s0/fw, s1/fw, s2/fw, s3/fw
		o[4], o[5], o[6], o[7] = s4/fw, s5/fw, s6/fw, s7/fw
	}
	for ; e < len(out); e++ {
		var s float64
		for _, x := range v[e : e+w] {
			s += x
		}
		out[e] = s / fw
	}
}

func windowStdGo(v []float64, w int, mean, out []float64) {
	fw1 := float64(w - 1)
	e := 0
	for ; e+8 <= len(out); e += 8 {
		m := mean[e : e+8 : e+8]
		m0, m1, m2, m3, m4, m5, m6, m7 := m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]
		var q0, q1, q2, q3, q4, q5, q6, q7 float64
		u := v[e : e+w+7]
		for i := range w {
			x := u[i : i+8 : i+8]
			d0, d1, d2, d3 := x[0]-m0, x[1]-m1, x[2]-m2, x[3]-m3
			d4, d5, d6, d7 := x[4]-m4, x[5]-m5, x[6]-m6, x[7]-m7
			q0 += float64(d0 * d0) // explicit conversions: no FMA
			q1 += float64(d1 * d1)
			q2 += float64(d2 * d2)
			q3 += float64(d3 * d3)
			q4 += float64(d4 * d4)
			q5 += float64(d5 * d5)
			q6 += float64(d6 * d6)
			q7 += float64(d7 * d7)
		}
		o := out[e : e+8 : e+8]
		o[0], o[1], o[2], o[3] = math.Sqrt(q0/fw1), math.Sqrt(q1/fw1), math.Sqrt(q2/fw1), math.Sqrt(q3/fw1)
		o[4], o[5], o[6], o[7] = math.Sqrt(q4/fw1), math.Sqrt(q5/fw1), math.Sqrt(q6/fw1), math.Sqrt(q7/fw1)
	}
	for ; e < len(out); e++ {
		m := mean[e]
		var q float64
		for _, x := range v[e : e+w] {
			d := x - m
			q += float64(d * d) // explicit conversion: no FMA
		}
		out[e] = math.Sqrt(q / fw1)
	}
}
