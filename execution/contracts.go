package execution

import (
	"fmt"
	"math"
	"strings"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/execution/frame"
	"github.com/groundgate/groundgate/execution/kernel"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Contracts (SPEC §9) are checked at four points of a morphism's life:
//
//	family and operation preconditions   before it runs       (risk filter)
//	family postconditions                after it runs        (runOne)
//	metric preconditions                 on the verified result, before artifacts are kept
//	metric postconditions                on the score, before it is selected
//
// A morphism failing any of them is rejected ("pre" with F9, "post" with
// F10) and nothing of it is committed: its artifacts are neither stored nor
// listed, its score is null, it is never selected. The state a clause
// reads only grows through steps whose clauses held.

// The contract codes, as ground names them for the gate.
const (
	codePre  = string(ground.F9)
	codePost = string(ground.F10)
)

// The predicates contracts add to a morphism's rejected list.
const (
	PredPre  = "pre"
	PredPost = "post"
)

// ClauseVerdict is one clause's outcome for one morphism, as the footprint
// records it: which clauses ran and whether each held.
type ClauseVerdict struct {
	Capability string         `json:"capability"`
	Phase      contract.Phase `json:"phase"`
	Clause     string         `json:"clause"`
	Holds      bool           `json:"holds"`
}

// contracts are the compiled contracts of one execution's family and
// metric.
type contracts struct {
	cache          *contract.Cache
	family, metric *contract.Program
	familyName     string
	metricName     string
}

func (cs *contracts) program(c registry.Capability) (*contract.Program, error) {
	p, err := cs.cache.Program(c.Identity.String(), string(c.Kind), c.ContractParams(), c.Sem.Contract)
	if err != nil {
		// Every stored contract compiled when it was written.
		return nil, fmt.Errorf("%w: %s's contract does not compile: %v", ErrNotRunnable, c.Name, err)
	}
	return p, nil
}

// verdictLog collects a morphism's verdicts and the reasons of those that
// failed.
type verdictLog struct {
	verdicts []ClauseVerdict
	failed   []string
}

func (l *verdictLog) add(vs []contract.Verdict, code string) bool {
	ok := true
	for _, v := range vs {
		l.verdicts = append(l.verdicts, ClauseVerdict{Capability: v.Capability, Phase: v.Phase, Clause: v.Clause, Holds: v.Holds})
		if !v.Holds {
			ok = false
			l.failed = append(l.failed, v.Describe(code))
		}
	}
	return ok
}

// requestFacts are the facts a request states, the same for every
// morphism of a grid.
func requestFacts(family, metric, data string) contract.State {
	return contract.State{"request.family": family, "request.metric": metric, "request.data": data}
}

// withParams returns base extended by params, typed as decl declares them;
// a parameter missing from params (or not a constant) is left out, and a
// clause reading it is not evaluable, so it fails.
func withParams(base contract.State, decl []contract.Param, params map[string]Value) contract.State {
	st := make(contract.State, len(base)+len(decl))
	for k, v := range base {
		st[k] = v
	}
	for _, p := range decl {
		v, ok := params[p.Name]
		if !ok {
			continue
		}
		if x, ok := registry.ParamType(p.Type).StateValue(v.IsString(), v.Float(), v.Text()); ok {
			st[contract.ParamKey(p.Name)] = x
		}
	}
	return st
}

// bound keeps the clauses whose parameters st binds. A parameter left
// unbound is already a rejection of its own (the schema predicate for a
// missing required parameter) or not a constant of the plan (an
// operation argument computed from a series); a clause about it has
// nothing to say, rather than failing for want of a value.
func bound(st contract.State) func(*contract.Compiled) bool {
	return func(c *contract.Compiled) bool {
		for _, r := range c.Reads {
			if _, ok := st[r]; !ok && strings.HasPrefix(r, "params.") {
				return false
			}
		}
		return true
	}
}

// dataFacts are computed once per execution from the parsed source.
func dataFacts(f *frame.Frame, digest hashing.Digest) contract.State {
	st := contract.State{"data.digest": digest.String()}
	rows := f.Len()
	st["data.rows"] = int64(rows)
	st["data.columns"] = append([]string{}, f.Names()...)
	st["data.assets"] = int64(f.Width())
	first, last, span, gap := "", "", int64(0), int64(0)
	if ds := f.Dates(); len(ds) > 0 {
		first, last = ds[0].String(), ds[len(ds)-1].String()
		span = int64(ds[len(ds)-1]) - int64(ds[0])
		for i := 1; i < len(ds); i++ {
			gap = max(gap, int64(ds[i])-int64(ds[i-1]))
		}
	}
	st["data.first_date"], st["data.last_date"] = first, last
	st["data.span_days"], st["data.max_gap_days"] = span, gap
	na := make(map[string]float64, f.Width())
	constant, tradable := []string{}, []string{}
	minv, nonPos := math.NaN(), false
	for j, name := range f.Names() {
		col := f.Column(j)
		missing, same, seen := 0, true, math.NaN()
		for _, v := range col {
			if math.IsNaN(v) {
				missing++
				continue
			}
			if math.IsNaN(seen) {
				seen = v
			} else if v != seen {
				same = false
			}
			if math.IsNaN(minv) || v < minv {
				minv = v
			}
			if v <= 0 {
				nonPos = true
			}
		}
		share := 1.0
		if rows > 0 {
			share = float64(missing) / float64(rows)
		}
		na[name] = share
		switch {
		case missing == len(col):
		case same:
			constant = append(constant, name)
		default:
			tradable = append(tradable, name)
		}
	}
	st["data.na_share"], st["data.constant_columns"], st["data.tradable_columns"] = na, constant, tradable
	st["data.min_price"], st["data.non_positive"] = minv, nonPos
	return st
}

// signalRange is the range of the signal the sizing was fed: a panel
// node's defined values, or a constant.
func signalRange(cp *compiled, vals []rval) (lo, hi float64) {
	lo, hi = math.NaN(), math.NaN()
	out := cp.plan.Nodes[cp.plan.Output]
	if out.Op != "volsize" || len(out.Args) == 0 {
		return lo, hi
	}
	a := out.Args[0]
	switch {
	case a.Num != nil:
		return *a.Num, *a.Num
	case a.Node != nil && vals[*a.Node].p != nil:
		return kernel.Range(vals[*a.Node].p.cols...)
	}
	return lo, hi
}

// resultFacts extends st by the verified outputs of the family step. The
// weights are read once, column by column (as they are laid out), since
// this runs for every morphism of a grid. pool, when not nil, lends the
// per-row sums.
func resultFacts(st contract.State, res *kernel.Result, sigLo, sigHi float64, pool *seriesPool) contract.State {
	out := make(contract.State, len(st)+10)
	for k, v := range st {
		out[k] = v
	}
	n := len(res.PnL)
	defined, finite, pnlRows := 0, 0, 0
	for _, v := range res.PnL {
		if math.IsNaN(v) {
			continue
		}
		defined++
		pnlRows++
		if !math.IsInf(v, 0) {
			finite++
		}
	}
	// Per row, the sum of |weight|; over everything, the turnover as TRN
	// counts it (NA weights as 0, the weight before row 0 as 0).
	gross := pool.get(n)
	defer pool.put(gross)
	clear(gross)
	var e kernel.Exposure
	for _, w := range res.Weights {
		e.Add(w[:min(len(w), n)], gross)
	}
	defined += e.Defined
	finite += e.Finite
	maxAbs, moved := e.MaxAbs, e.Moved
	grossMax := 0.0
	for _, g := range gross {
		grossMax = max(grossMax, g)
	}
	share := 1.0
	if defined > 0 {
		share = float64(finite) / float64(defined)
	}
	tv := 0.0
	if n > 0 {
		tv = moved / float64(n)
	}
	out["result.rows"] = int64(n)
	out["result.assets"] = append([]string{}, res.Assets...)
	unknown := []string{}
	if na, ok := st["data.na_share"].(map[string]float64); ok {
		for _, a := range res.Assets {
			if _, ok := na[a]; !ok {
				unknown = append(unknown, a)
			}
		}
	}
	out["result.unknown_assets"] = unknown
	out["result.pnl_rows"] = int64(pnlRows)
	out["result.finite_share"] = share
	out["result.max_abs_weight"] = maxAbs
	out["result.gross_exposure"] = grossMax
	out["result.turnover"] = tv
	out["result.signal_min"], out["result.signal_max"] = sigLo, sigHi
	return out
}

// scoreFacts extends st by the metric's value.
func scoreFacts(st contract.State, score float64, evalRows int) contract.State {
	out := make(contract.State, len(st)+2)
	for k, v := range st {
		out[k] = v
	}
	out["result.score"] = score
	out["result.evaluation_rows"] = int64(evalRows)
	return out
}

// opCall is an operation a plan applies, with the parameters it binds,
// for the operation's preconditions.
type opCall struct {
	cap    registry.Capability
	params map[string]Value
}

// boundParams binds an operation's parameters from its arguments (inputs
// first, then parameters in schema order) and defaults; an argument that
// is not a constant is left unbound.
func boundParams(capb registry.Capability, args []cval) map[string]Value {
	out := map[string]Value{}
	for i, p := range capb.Alg.Params {
		k := capb.Alg.Arity + i
		if k < len(args) {
			switch a := args[k]; {
			case a.t == tNum && !a.na:
				out[p.Name] = Num(a.num)
			case a.t == tStr:
				out[p.Name] = Str(a.str)
			}
			continue
		}
		switch d := p.Default.(type) {
		case float64:
			out[p.Name] = Num(d)
		case string:
			out[p.Name] = Str(d)
		}
	}
	return out
}
