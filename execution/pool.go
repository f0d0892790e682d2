package execution

// seriesPool recycles the series a worker's plans compute. A node value no
// later node reads, and a morphism's values once it has run, go back to
// the pool and become the outputs of the next nodes, instead of fresh
// memory that the garbage collector must clear and reclaim: a 100-morphism
// grid on a 30-column, 10,000-row frame would otherwise allocate about 2
// GB. Only series the pool handed out, and that nothing else holds, come
// back (rval.owned). One goroutine uses a pool; a nil pool allocates.
type seriesPool struct {
	rows  int         // every series is as long as the frame
	free  [][]float64 // last in, first out: the most recent is the warmest
	limit int         // the most series kept
}

// poolBytes bounds what a pool keeps.
const poolBytes = 32 << 20

func newSeriesPool(rows int) *seriesPool {
	return &seriesPool{rows: rows, limit: max(16, poolBytes/max(8*rows, 1))}
}

// get returns a series of n rows with arbitrary contents: the kernel
// writing into it writes every row.
func (p *seriesPool) get(n int) []float64 {
	if p != nil && n == p.rows {
		if k := len(p.free); k > 0 {
			s := p.free[k-1]
			p.free = p.free[:k-1]
			return s
		}
	}
	return make([]float64, n)
}

func (p *seriesPool) put(s []float64) {
	if p != nil && len(s) == p.rows && len(p.free) < p.limit {
		p.free = append(p.free, s)
	}
}

// recycle takes back the series of an owned value: a panel's columns, a
// result's weights (never its P&L, which the grid keeps for scoring).
func (p *seriesPool) recycle(v rval) {
	if p == nil || !v.owned {
		return
	}
	if v.p != nil {
		for _, c := range v.p.cols {
			p.put(c)
		}
	}
	if v.res != nil {
		for _, c := range v.res.Weights {
			p.put(c)
		}
	}
}
