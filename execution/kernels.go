package execution

import (
	"fmt"
	"math"

	"github.com/groundgate/groundgate/execution/frame"
	"github.com/groundgate/groundgate/execution/kernel"
	"github.com/groundgate/groundgate/hashing"
)

// The engine's kernels. A registry operation whose expression is its own
// name applied to its inputs and parameters — dlog is "(dlog x)", wzs is
// "(wzs x $window)" — is a primitive, run by the kernel of that name
// (execution/kernel does the numerics). volsize and trailing_vol are
// engine built-ins with no registry entry: volsize(sig, r, w_r, τ, L, lag)
// is the families' common sizing step, which the planner splits into
// trailing_vol(r, w_r) (σ̂, shared by every morphism with the same returns
// and risk window) and volsize(sig, r, σ̂, τ, L, lag).

var (
	kernels  map[string]kernelFn
	builtins map[string]kernelFn
	runners  map[string]runner
)

func init() {
	kernels = map[string]kernelFn{
		"wkd":    compileWkd,
		"clip":   compileClip,
		"spread": compileSpread,
		"col":    compileCol,
		"const":  compileConst,
	}
	runners = map[string]runner{
		"input":        runInput,
		"wkd":          runWkd,
		"clip":         runClip,
		"spread":       runSpread,
		"col":          runCol,
		"trailing_vol": runTrailingVol,
		"volsize":      runVolsize,
	}
	for op := range unarySeries {
		kernels[op] = compileUnary
		runners[op] = runUnary
	}
	for op, min := range windowMin {
		kernels[op] = compileWindowed(min)
		runners[op] = runWindowed
	}
	for op := range binaryOps {
		kernels[op] = compileBinary
		runners[op] = runBinary
	}
	builtins = map[string]kernelFn{"volsize": compileVolsize, "mean": compileCross, "sum": compileCross}
	runners["mean"], runners["sum"] = runCross, runCross
}

// compileCross: (mean x) and (sum x), across the columns of a series,
// row by row — the cross-sectional kernels behind xs_mean, xs_sum,
// xs_demean, XS_REL_RET and EW_BENCH. The result is one column.
func compileCross(c *compiler, op string, _ *hashing.Digest, args []cval) (cval, error) {
	if err := arity(op, args, 1); err != nil {
		return cval{}, err
	}
	if err := want(op, 0, args[0], tPanel); err != nil {
		return cval{}, err
	}
	return cval{t: tPanel, node: c.node(op, nil, args[0])}, nil
}

// runCross skips NA cells: a row's mean is over the columns defined on
// that day (a currency not yet quoted is not a zero), NA when none is.
// Columns are added left to right, so the result is one value everywhere.
func runCross(_ *frame.Frame, n *Node, in []rval) (rval, error) {
	p := in[0].p
	if p == nil || len(p.cols) == 0 {
		return rval{}, fmt.Errorf("%s: no columns", n.Op)
	}
	out := make([]float64, len(p.cols[0]))
	for i := range out {
		sum, k := 0.0, 0
		for _, col := range p.cols {
			if v := col[i]; !math.IsNaN(v) {
				sum += v
				k++
			}
		}
		switch {
		case k == 0:
			out[i] = math.NaN()
		case n.Op == "mean":
			out[i] = sum / float64(k)
		default:
			out[i] = sum
		}
	}
	return rval{p: &panel{names: []string{n.Op}, cols: [][]float64{out}}}, nil
}

// Unary kernels, on a series and (where it makes sense) on a constant.
var unarySeries = map[string]func([]float64) []float64{
	"dlog": kernel.Dlog, "ret": kernel.Ret, "locf": kernel.Locf,
	"cs0": kernel.Cs0, "cs1": kernel.Cs1, "ecs1": kernel.Ecs1,
	"sign": kernel.Sign, "neg": kernel.Neg, "abs": kernel.Abs,
	"log": kernel.Log, "exp": kernel.Exp, "sqrt": kernel.Sqrt, "inv": kernel.Inv,
}

// unaryScalar folds a unary kernel over a constant with the series
// kernel's semantics (applied to a one-row series).
func unaryScalar(op string, v float64) (float64, bool) {
	f, ok := unarySeries[op]
	if !ok {
		return 0, false
	}
	switch op {
	case "sign", "neg", "abs", "log", "exp", "sqrt", "inv":
		return f([]float64{v})[0], true
	}
	return 0, false
}

// Windowed kernels and the smallest window (or shift) each accepts.
var windowMin = map[string]int{"shift": 0, "diff": 0, "rmean": 1, "rstd": 2, "wzs": 2, "vnorm": 2}

var windowFns = map[string]func([]float64, int) ([]float64, error){
	"shift": kernel.Shift, "diff": kernel.Diff, "rmean": kernel.Rmean,
	"rstd": kernel.Rstd, "wzs": kernel.Wzs, "vnorm": kernel.Vnorm,
}

// Binary kernels: series ∘ series, series ∘ constant, constant ∘ series.
type binaryOp struct {
	series func(a, b []float64) ([]float64, error)
	right  func(x []float64, c float64) []float64 // x ∘ c
	left   func(c float64, x []float64) []float64 // c ∘ x
}

var binaryOps = map[string]binaryOp{
	"add": {kernel.Add, kernel.AddScalar, func(c float64, x []float64) []float64 { return kernel.AddScalar(x, c) }},
	"sub": {kernel.Sub, kernel.SubScalar, kernel.ScalarSub},
	"mul": {kernel.Mul, kernel.MulScalar, func(c float64, x []float64) []float64 { return kernel.MulScalar(x, c) }},
	"div": {kernel.Div, kernel.DivScalar, kernel.ScalarDiv},
	"gt":  {kernel.Gt, kernel.GtScalar, func(c float64, x []float64) []float64 { return kernel.LtScalar(x, c) }},
	"lt":  {kernel.Lt, kernel.LtScalar, func(c float64, x []float64) []float64 { return kernel.GtScalar(x, c) }},
	"ge":  {kernel.Ge, kernel.GeScalar, func(c float64, x []float64) []float64 { return kernel.LeScalar(x, c) }},
	"le":  {kernel.Le, kernel.LeScalar, func(c float64, x []float64) []float64 { return kernel.GeScalar(x, c) }},
	"eq":  {kernel.Eq, kernel.EqScalar, func(c float64, x []float64) []float64 { return kernel.EqScalar(x, c) }},
	"ne":  {kernel.Ne, kernel.NeScalar, func(c float64, x []float64) []float64 { return kernel.NeScalar(x, c) }},
}

// ---- compile side ----

func compileUnary(c *compiler, op string, id *hashing.Digest, args []cval) (cval, error) {
	if err := arity(op, args, 1); err != nil {
		return cval{}, err
	}
	switch a := args[0]; a.t {
	case tPanel:
		return cval{t: tPanel, node: c.node(op, id, a), wide: a.wide}, nil
	case tNum:
		if a.na {
			return a, nil
		}
		if v, ok := unaryScalar(op, a.num); ok {
			return c.checkFolded(op, folded(v)), nil
		}
	}
	return cval{}, want(op, 0, args[0], tPanel)
}

func compileWkd(c *compiler, op string, id *hashing.Digest, args []cval) (cval, error) {
	if err := arity(op, args, 1); err != nil {
		return cval{}, err
	}
	if err := want(op, 0, args[0], tPanel); err != nil {
		return cval{}, err
	}
	return cval{t: tPanel, node: c.node(op, id, args[0]), wide: args[0].wide}, nil
}

func compileWindowed(min int) kernelFn {
	return func(c *compiler, op string, id *hashing.Digest, args []cval) (cval, error) {
		if err := arity(op, args, 2); err != nil {
			return cval{}, err
		}
		if err := want(op, 0, args[0], tPanel); err != nil {
			return cval{}, err
		}
		if err := want(op, 1, args[1], tNum); err != nil {
			return cval{}, err
		}
		c.intArg(op, "window", args[1], min)
		return cval{t: tPanel, node: c.node(op, id, args...), wide: args[0].wide}, nil
	}
}

func compileClip(c *compiler, op string, id *hashing.Digest, args []cval) (cval, error) {
	if err := arity(op, args, 3); err != nil {
		return cval{}, err
	}
	for i := 1; i < 3; i++ {
		if err := want(op, i, args[i], tNum); err != nil {
			return cval{}, err
		}
	}
	lo, hi := args[1], args[2]
	if lo.na || hi.na || !(lo.num <= hi.num) {
		c.domainf("clip: lo %s must not exceed hi %s", cvalText(lo), cvalText(hi))
	}
	switch a := args[0]; a.t {
	case tPanel:
		return cval{t: tPanel, node: c.node(op, id, args...), wide: a.wide}, nil
	case tNum:
		if a.na {
			return a, nil
		}
		if lo.na || hi.na || !(lo.num <= hi.num) {
			return cval{t: tNum, na: true}, nil
		}
		v, _ := kernel.Clip([]float64{a.num}, lo.num, hi.num)
		return folded(v[0]), nil
	}
	return cval{}, want(op, 0, args[0], tPanel, tNum)
}

func compileBinary(c *compiler, op string, id *hashing.Digest, args []cval) (cval, error) {
	if err := arity(op, args, 2); err != nil {
		return cval{}, err
	}
	for i, a := range args {
		if err := want(op, i, a, tPanel, tNum); err != nil {
			return cval{}, err
		}
	}
	a, b := args[0], args[1]
	if a.t == tNum && b.t == tNum {
		if a.na || b.na {
			return cval{t: tNum, na: true}, nil
		}
		// Fold with the series kernel on one row: the same arithmetic.
		v, _ := binaryOps[op].series([]float64{a.num}, []float64{b.num})
		return c.checkFolded(op, folded(v[0])), nil
	}
	if a.t == tPanel && b.t == tPanel && a.node == b.node && op != "add" && op != "mul" {
		// x − x, x ÷ x, x > x …: a constant wherever x is defined. It is
		// how a degenerate choice shows, such as CARRY with front = next
		// (the roll yield ln F − ln F is 0 and its z-score never defined).
		c.domainf("%s: both operands are the same series, so the result is constant", op)
	}
	return cval{t: tPanel, node: c.node(op, id, a, b), wide: a.wide || b.wide}, nil
}

func compileSpread(c *compiler, op string, id *hashing.Digest, args []cval) (cval, error) {
	if err := arity(op, args, 3); err != nil {
		return cval{}, err
	}
	if err := want(op, 0, args[0], tPanel); err != nil {
		return cval{}, err
	}
	for i := 1; i < 3; i++ {
		if err := want(op, i, args[i], tStr); err != nil {
			return cval{}, err
		}
	}
	if !args[0].wide {
		return cval{}, resolveErr("%s: needs the data frame, not one column", op)
	}
	c.columns = append(c.columns, args[1].str, args[2].str)
	return cval{t: tPanel, node: c.node(op, id, args...)}, nil
}

func compileCol(c *compiler, op string, id *hashing.Digest, args []cval) (cval, error) {
	if err := arity(op, args, 2); err != nil {
		return cval{}, err
	}
	if err := want(op, 0, args[0], tPanel); err != nil {
		return cval{}, err
	}
	if err := want(op, 1, args[1], tStr); err != nil {
		return cval{}, err
	}
	if !args[0].wide {
		return cval{}, resolveErr("%s: needs the data frame, not one column", op)
	}
	c.columns = append(c.columns, args[1].str)
	return cval{t: tPanel, node: c.node(op, id, args...)}, nil
}

func compileConst(c *compiler, op string, _ *hashing.Digest, args []cval) (cval, error) {
	if err := arity(op, args, 1); err != nil {
		return cval{}, err
	}
	if err := want(op, 0, args[0], tNum); err != nil {
		return cval{}, err
	}
	return c.checkFolded(op, args[0]), nil
}

// compileVolsize: (volsize sig r w_r τ L lag).
func compileVolsize(c *compiler, op string, _ *hashing.Digest, args []cval) (cval, error) {
	if err := arity(op, args, 6); err != nil {
		return cval{}, err
	}
	if err := want(op, 0, args[0], tPanel, tNum); err != nil {
		return cval{}, err
	}
	if err := want(op, 1, args[1], tPanel); err != nil {
		return cval{}, err
	}
	for i := 2; i < 6; i++ {
		if err := want(op, i, args[i], tNum); err != nil {
			return cval{}, err
		}
	}
	sig, r := args[0], args[1]
	if sig.t == tPanel && sig.wide && !r.wide {
		return cval{}, resolveErr("%s: the signal spans every column but the returns one", op)
	}
	if sig.t == tNum && sig.na {
		c.domainf("%s: the signal is NA", op)
	}
	c.intArg(op, "risk_window", args[2], 2)
	c.positive(op, "target_vol", args[3])
	c.positive(op, "leverage", args[4])
	c.intArg(op, "lag", args[5], 1)
	if !args[4].na {
		c.lev = append(c.lev, args[4].num)
	}
	c.builtin["trailing_vol"] = true
	vol := cval{t: tPanel, node: c.node("trailing_vol", nil, r, args[2]), wide: r.wide}
	out := c.node(op, nil, sig, r, vol, args[3], args[4], args[5])
	return cval{t: tResult, node: out}, nil
}

// ---- run side ----

// panel is a series value: one column per asset, row-aligned with the
// frame.
type panel struct {
	names []string
	cols  [][]float64
}

// rval is a node's value at run time.
type rval struct {
	p   *panel
	res *kernel.Result
	// owned: the series (a panel's columns, a result's weights) came from
	// the worker's seriesPool and nothing else holds them.
	owned bool
}

type runner func(f *frame.Frame, n *Node, in []rval) (rval, error)

// A pooledRunner is a runner that writes its outputs into series from the
// worker's pool; it gives bit for bit what the runner gives.
type pooledRunner func(f *frame.Frame, n *Node, in []rval, pool *seriesPool) (rval, error)

// pooledRunners: the kernels of the families' plans that can write into a
// given series (kernel's Into forms).
var pooledRunners = map[string]pooledRunner{
	"dlog":         pooledUnary(kernel.DlogInto),
	"cs0":          pooledUnary(kernel.Cs0Into),
	"rmean":        pooledWindowed(kernel.RmeanInto),
	"rstd":         pooledWindowed(kernel.RstdInto),
	"wzs":          pooledWindowed(kernel.WzsInto),
	"vnorm":        pooledWindowed(kernel.VnormInto),
	"trailing_vol": pooledWindowed(kernel.TrailingVolInto),
	"clip":         runClipPooled,
	"volsize":      runVolsizePooled,
}

// mapPanelInto is mapPanel with every output column from pool.
func mapPanelInto(p *panel, pool *seriesPool, f func(out, x []float64) error) (rval, error) {
	out := &panel{names: p.names, cols: make([][]float64, len(p.cols))}
	for j, col := range p.cols {
		out.cols[j] = pool.get(len(col))
		if err := f(out.cols[j], col); err != nil {
			return rval{}, err
		}
	}
	return rval{p: out, owned: true}, nil
}

func pooledUnary(fn func(out, x []float64) error) pooledRunner {
	return func(_ *frame.Frame, _ *Node, in []rval, pool *seriesPool) (rval, error) {
		return mapPanelInto(in[0].p, pool, fn)
	}
}

func pooledWindowed(fn func(out, x []float64, w int) error) pooledRunner {
	return func(_ *frame.Frame, n *Node, in []rval, pool *seriesPool) (rval, error) {
		w := int(num(n.Args[1]))
		return mapPanelInto(in[0].p, pool, func(out, x []float64) error { return fn(out, x, w) })
	}
}

func runClipPooled(_ *frame.Frame, n *Node, in []rval, pool *seriesPool) (rval, error) {
	lo, hi := num(n.Args[1]), num(n.Args[2])
	return mapPanelInto(in[0].p, pool, func(out, x []float64) error { return kernel.ClipInto(out, x, lo, hi) })
}

func mapPanel(p *panel, f func([]float64) ([]float64, error)) (rval, error) {
	out := &panel{names: p.names, cols: make([][]float64, len(p.cols))}
	for j, col := range p.cols {
		v, err := f(col)
		if err != nil {
			return rval{}, err
		}
		out.cols[j] = v
	}
	return rval{p: out}, nil
}

func num(a Arg) float64 {
	if a.Num == nil {
		return math.NaN()
	}
	return *a.Num
}

func str(a Arg) string {
	if a.Str == nil {
		return ""
	}
	return *a.Str
}

func runInput(f *frame.Frame, _ *Node, _ []rval) (rval, error) {
	p := &panel{names: f.Names(), cols: make([][]float64, f.Width())}
	for j := range p.cols {
		p.cols[j] = f.Column(j)
	}
	return rval{p: p}, nil
}

func runUnary(_ *frame.Frame, n *Node, in []rval) (rval, error) {
	fn := unarySeries[n.Op]
	return mapPanel(in[0].p, func(x []float64) ([]float64, error) { return fn(x), nil })
}

func runWkd(f *frame.Frame, _ *Node, in []rval) (rval, error) {
	return mapPanel(in[0].p, func(x []float64) ([]float64, error) { return kernel.Wkd(x, f.Dates()) })
}

func runWindowed(_ *frame.Frame, n *Node, in []rval) (rval, error) {
	fn, w := windowFns[n.Op], int(num(n.Args[1]))
	return mapPanel(in[0].p, func(x []float64) ([]float64, error) { return fn(x, w) })
}

func runClip(_ *frame.Frame, n *Node, in []rval) (rval, error) {
	lo, hi := num(n.Args[1]), num(n.Args[2])
	return mapPanel(in[0].p, func(x []float64) ([]float64, error) { return kernel.Clip(x, lo, hi) })
}

func runBinary(_ *frame.Frame, n *Node, in []rval) (rval, error) {
	op := binaryOps[n.Op]
	a, b := n.Args[0], n.Args[1]
	switch {
	case a.isNode() && b.isNode():
		pa, pb := in[0].p, in[1].p
		wide, narrow, swap := pa, pb, false
		if len(pb.cols) > len(pa.cols) {
			wide, narrow, swap = pb, pa, true
		}
		if len(narrow.cols) != len(wide.cols) && len(narrow.cols) != 1 {
			return rval{}, fmt.Errorf("%s: %d columns against %d", n.Op, len(pa.cols), len(pb.cols))
		}
		out := &panel{names: wide.names, cols: make([][]float64, len(wide.cols))}
		for j := range wide.cols {
			k := j
			if len(narrow.cols) == 1 {
				k = 0
			}
			x, y := wide.cols[j], narrow.cols[k]
			if swap {
				x, y = y, x
			}
			v, err := op.series(x, y)
			if err != nil {
				return rval{}, err
			}
			out.cols[j] = v
		}
		return rval{p: out}, nil
	case a.isNode():
		c := num(b)
		return mapPanel(in[0].p, func(x []float64) ([]float64, error) { return op.right(x, c), nil })
	default:
		c := num(a)
		return mapPanel(in[1].p, func(x []float64) ([]float64, error) { return op.left(c, x), nil })
	}
}

func lookup(f *frame.Frame, name string) ([]float64, error) {
	col, ok := f.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("column %q: %w", name, kernel.ErrColumn)
	}
	return col, nil
}

func runCol(f *frame.Frame, n *Node, _ []rval) (rval, error) {
	name := str(n.Args[1])
	col, err := lookup(f, name)
	if err != nil {
		return rval{}, err
	}
	return rval{p: &panel{names: []string{name}, cols: [][]float64{col}}}, nil
}

func runSpread(f *frame.Frame, n *Node, _ []rval) (rval, error) {
	an, bn := str(n.Args[1]), str(n.Args[2])
	a, err := lookup(f, an)
	if err != nil {
		return rval{}, err
	}
	b, err := lookup(f, bn)
	if err != nil {
		return rval{}, err
	}
	v, err := kernel.Spread(a, b)
	if err != nil {
		return rval{}, err
	}
	return rval{p: &panel{names: []string{an}, cols: [][]float64{v}}}, nil
}

func runTrailingVol(_ *frame.Frame, n *Node, in []rval) (rval, error) {
	w := int(num(n.Args[1]))
	return mapPanel(in[0].p, func(r []float64) ([]float64, error) { return kernel.TrailingVol(r, w) })
}

// runVolsize: args sig, r, σ̂, τ, L, lag.
func runVolsize(f *frame.Frame, n *Node, in []rval) (rval, error) {
	return runVolsizePooled(f, n, in, nil)
}

// runVolsizePooled takes the weights from pool (nil: allocates them).
func runVolsizePooled(f *frame.Frame, n *Node, in []rval, pool *seriesPool) (rval, error) {
	r, vol := in[1].p, in[2].p
	signals := make([][]float64, len(r.cols))
	if n.Args[0].isNode() {
		sig := in[0].p
		if len(sig.cols) != len(r.cols) && len(sig.cols) != 1 {
			return rval{}, fmt.Errorf("volsize: %d signal columns for %d assets", len(sig.cols), len(r.cols))
		}
		for a := range signals {
			if len(sig.cols) == 1 {
				signals[a] = sig.cols[0]
			} else {
				signals[a] = sig.cols[a]
			}
		}
	} else {
		c := num(n.Args[0])
		constant := make([]float64, f.Len())
		for t := range constant {
			constant[t] = c
		}
		for a := range signals {
			signals[a] = constant
		}
	}
	p := kernel.Params{TargetVol: num(n.Args[3]), Leverage: num(n.Args[4]), Lag: int(num(n.Args[5]))}
	var weights [][]float64
	if pool != nil {
		weights = make([][]float64, len(r.cols))
		for a, c := range r.cols {
			weights[a] = pool.get(len(c))
		}
	}
	res, err := kernel.SizeInto(weights, r.cols, signals, vol.cols, p)
	if err != nil {
		return rval{}, err
	}
	res.Assets = append([]string(nil), r.names...)
	return rval{res: &res, owned: pool != nil}, nil
}
