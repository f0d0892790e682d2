//go:build !purego

package kernel

// windowStatsT sets mean (and std, unless nil) to the means and sample
// standard deviations of blocks×64 windows of w ≥ 1 values of v (fw = w,
// fw1 = w − 1), exactly as windowMeansGo and windowStdGo do. t is scratch
// for 8·(64·blocks + w + 16) + 8 float64s: the values transposed, so that
// every load of the loops is aligned (see windowt_amd64.s).
//
//go:noescape
func windowStatsT(v *float64, w, blocks int, fw, fw1 float64, mean, std, t *float64)

// tBlock is how many windows windowStatsT computes at a time.
const tBlock = 64

// vecScratchSmall is the scratch rolling keeps on its stack: enough for
// windows of up to 256 values.
const vecScratchSmall = 8*(rollChunk+256+16) + 8

// vecScratch is the scratch windowStatsVec needs for a chunk of windows of
// w values (0 where it does not run).
func vecScratch(w int) int {
	if !haveAVX512 {
		return 0
	}
	return 8*(rollChunk+w+16) + 8
}

// windowStatsVec does the leading whole blocks of 64 windows with
// windowStatsT, where the processor has AVX-512 and FMA, and returns how
// many windows it did.
func windowStatsVec(v []float64, w int, mean, std, scratch []float64) int {
	blocks := len(mean) / tBlock
	if !haveAVX512 || blocks == 0 || w < 1 || len(scratch) < 8*(tBlock*blocks+w+16)+8 {
		return 0
	}
	_ = v[blocks*tBlock+w-2] // the last window read is in v
	var sp *float64
	if std != nil {
		_ = std[blocks*tBlock-1]
		sp = &std[0]
	}
	windowStatsT(&v[0], w, blocks, float64(w), float64(w-1), &mean[0], sp, &scratch[0])
	return blocks * tBlock
}
