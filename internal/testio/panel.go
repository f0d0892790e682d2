package testio

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// PanelCSV writes a synthetic panel shaped like a currency panel: cols
// geometric random walks over rows weekdays from 1990, 1% of cells
// missing and every 250th row empty (a holiday). The seed is fixed, so the
// bytes are too. Benchmarks of the executor and of the
// workers run grids on it.
func PanelCSV(rows, cols int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	level := make([]float64, cols)
	for j := range level {
		level[j] = 1 + rng.Float64()*100
	}
	var b bytes.Buffer
	b.WriteString("Date")
	for j := range cols {
		fmt.Fprintf(&b, ",CCY%02d", j)
	}
	b.WriteByte('\n')
	day := time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		for day.Weekday() == time.Saturday || day.Weekday() == time.Sunday {
			day = day.AddDate(0, 0, 1)
		}
		b.WriteString(day.Format(time.DateOnly))
		for j := range cols {
			level[j] *= math.Exp(rng.NormFloat64() * 0.006)
			b.WriteByte(',')
			if i%250 == 249 || rng.IntN(100) == 0 {
				continue
			}
			b.WriteString(strconv.FormatFloat(level[j], 'g', 10, 64))
		}
		b.WriteByte('\n')
		day = day.AddDate(0, 0, 1)
	}
	return b.Bytes()
}
