package kernel_test

import (
	"fmt"
	"math"

	"github.com/groundgate/groundgate/execution/kernel"
)

// DOMAIN.md's hand vector.
func ExampleWzs() {
	x := []float64{1, 2, math.NaN(), 4, 5, 6, 7, 8}
	z, err := kernel.Wzs(x, 3)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.6f\n", z)
	fmt.Println(kernel.Cs1(x))
	// Output:
	// [NaN NaN NaN NaN 1.745743 1.527525 2.000000 2.000000]
	// [2 4 NaN 8 13 19 26 34]
}

// Scoring a grid: a common evaluation window, one score per morphism, the
// best in the metric's direction.
func ExampleBest() {
	nan := math.NaN()
	pnls := [][]float64{
		{nan, 0.01, -0.02, 0.03},
		{nan, nan, 0.01, 0.01},
	}
	start := kernel.CommonStart(pnls...) // row 2: the first on which both are defined
	m, _ := kernel.LookupMetric("TRET")
	scores := make([]float64, len(pnls))
	for i, p := range pnls {
		scores[i], _ = kernel.Evaluate(m.Name, p, nil, start)
	}
	fmt.Printf("start %d, scores %.2f, best %d\n", start, scores, kernel.Best(m, scores))
	// Output: start 2, scores [0.01 0.02], best 1
}
