//go:build !amd64 || purego

package kernel

// Without the amd64 vector loops the pure Go loops do everything.
const haveAVX, haveAVX2 = false, false

func windowMeansVec(v []float64, w int, out []float64) int { return 0 }

func windowStdVec(v []float64, w int, mean, out []float64) int { return 0 }

func logsVec(x, out []float64) int { return 0 }

const haveAVX512 = false

const vecScratchSmall = 0

func vecScratch(w int) int { return 0 }

func windowStatsVec(v []float64, w int, mean, std, scratch []float64) int { return 0 }

func scoresVec(next, mean, std []float64, k float64, out []float64) int { return 0 }

func clipVec(x []float64, lo, hi float64, out []float64) int { return 0 }

func sizeVec(sig, vol []float64, tau, lo, hi float64, w []float64) int { return 0 }

func pnlAddVec(w, r, sum, count []float64) int { return 0 }

func firstRepeatVec(v []float64) (at, looked int) { return 0, 1 }

func exposureVec(w, gross []float64, e *Exposure) int { return 1 }

func rangeVec(x []float64, lohi *[2]float64) int { return 0 }

func naRowsVec(x []float64, base int, rows []int) ([]int, int) { return rows, 0 }

func dlogVec(out, x []float64) bool { return false }
