//go:build !purego

package kernel

// windowMeansAVX sets out to the means of blocks×32 windows of w ≥ 1
// values of v (fw = w).
//
//go:noescape
func windowMeansAVX(v *float64, w, blocks int, fw float64, out *float64)

// windowStdAVX sets out to the standard deviations around mean of
// blocks×32 windows of w ≥ 1 values of v (fw1 = w − 1).
//
//go:noescape
func windowStdAVX(v *float64, w, blocks int, mean *float64, fw1 float64, out *float64)

const vecBlock = 32 // windows per block in window_amd64.s

// windowMeansVec does the leading whole blocks of windows with AVX and
// returns how many windows it did.
func windowMeansVec(v []float64, w int, out []float64) int {
	blocks := len(out) / vecBlock
	if !haveAVX || blocks == 0 || w < 1 {
		return 0
	}
	_ = v[blocks*vecBlock+w-2] // the last window read is in v
	windowMeansAVX(&v[0], w, blocks, float64(w), &out[0])
	return blocks * vecBlock
}

func windowStdVec(v []float64, w int, mean, out []float64) int {
	blocks := len(out) / vecBlock
	if !haveAVX || blocks == 0 || w < 1 {
		return 0
	}
	_ = v[blocks*vecBlock+w-2]
	_ = mean[blocks*vecBlock-1]
	windowStdAVX(&v[0], w, blocks, &mean[0], float64(w-1), &out[0])
	return blocks * vecBlock
}
