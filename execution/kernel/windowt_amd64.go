//go:build !purego

package kernel

// windowStatsT sets mean (and std, unless nil) to the means and sample
// standard deviations of blocks×32 windows of w ≥ 1 values of v (fw = w,
// fw1 = w − 1), exactly as windowMeansGo and windowStdGo do. t is scratch
// of at least vecScratch(w) float64s: the values transposed, so that every
// load of the loops is aligned (see windowt_amd64.s).
//
//go:noescape
func windowStatsT(v *float64, w, blocks int, fw, fw1 float64, mean, std, t *float64)

// vecScratchSmall is the scratch rolling keeps on its stack: enough for
// windows of up to 256 values.
const vecScratchSmall = 4*(rollChunk+256+8) + 4

// vecScratch is the scratch windowStatsVec needs for a chunk of windows of
// w values (0 where it does not run).
func vecScratch(w int) int {
	if !haveAVX512 {
		return 0
	}
	return 4*(rollChunk+w+8) + 4
}

// windowStatsVec does the leading whole blocks of 32 windows with
// windowStatsT, where the processor has AVX-512 and FMA, and returns how
// many windows it did.
func windowStatsVec(v []float64, w int, mean, std, scratch []float64) int {
	blocks := len(mean) / vecBlock
	if !haveAVX512 || blocks == 0 || w < 1 || len(scratch) < 4*(vecBlock*blocks+w+8)+4 {
		return 0
	}
	_ = v[blocks*vecBlock+w-2] // the last window read is in v
	var sp *float64
	if std != nil {
		_ = std[blocks*vecBlock-1]
		sp = &std[0]
	}
	windowStatsT(&v[0], w, blocks, float64(w), float64(w-1), &mean[0], sp, &scratch[0])
	return blocks * vecBlock
}
