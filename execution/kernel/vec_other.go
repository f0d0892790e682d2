//go:build !amd64 || purego

package kernel

// Without the amd64 vector loops the pure Go loops do everything.
const haveAVX, haveAVX2 = false, false

func windowMeansVec(v []float64, w int, out []float64) int { return 0 }

func windowStdVec(v []float64, w int, mean, out []float64) int { return 0 }

func logsVec(x, out []float64) int { return 0 }
