//go:build !purego

package kernel

// logsAVX2 sets out[i] to ln x[i] for i < 4·quads, bit for bit
// math.Log's result where x[i] is positive and finite.
//
//go:noescape
func logsAVX2(x *float64, quads int, out *float64)

// logsVec does the leading whole quads of x with AVX2 and returns how many
// values it did; out[i] is math.Log(x[i]) only where x[i] is positive and
// finite.
func logsVec(x, out []float64) int {
	quads := len(x) / 4
	if !haveAVX2 || quads == 0 {
		return 0
	}
	_ = out[quads*4-1]
	logsAVX2(&x[0], quads, &out[0])
	return quads * 4
}
