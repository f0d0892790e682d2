package kernel

import "math"

// logs sets out[i] to math.Log(x[i]), bit for bit, for every i < len(x).
// On amd64 with AVX2 the positive finite values go through logsAVX2 (the
// instructions of math.Log's own amd64 assembly, four values at a time);
// the others, and the rest, through math.Log.
func logs(x, out []float64) {
	done := logsVec(x, out)
	for i, v := range x[:done] {
		if !(v > 0 && v <= math.MaxFloat64) { // 0, negative, +Inf, NaN
			out[i] = math.Log(v)
		}
	}
	for i := done; i < len(x); i++ {
		out[i] = math.Log(x[i])
	}
}
