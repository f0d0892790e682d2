package contract

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
)

// Cost bounds. A clause is refused at write when CEL's static estimate of
// its worst case exceeds MaxEstimatedCost (lists and maps sized as below);
// evaluation stops at MaxCost, and the clause then fails (it never holds
// by default).
const (
	MaxEstimatedCost = 100_000
	MaxCost          = 100_000
	// sizeHint is the size the estimate assumes for the state's lists and
	// maps (columns of one data file), stringHint for its strings (names).
	sizeHint   = 4096
	stringHint = 256
	// toolSizeHint is the size the estimate assumes for every list, map
	// and string of a tool's state (ToolSchemaVersion): JSON whose shape
	// the schema does not know, where a value typed dyn may be any of
	// them.
	toolSizeHint = 512
)

// baseEnv is CEL's standard library with the math, strings and bindings
// (cel.bind: a local name for a value read once) extensions and numeric
// comparisons across int and double (data.rows > 2.5 means what it says). It is immutable, built once and extended per capability.
var baseEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.CrossTypeNumericComparisons(true),
		ext.Math(),
		ext.Strings(),
		ext.Bindings(),
	)
})

// Compiled is one clause ready to evaluate.
type Compiled struct {
	Clause Clause
	Phase  Phase
	// Reads lists the state keys the clause names, sorted: a failure
	// reports their values.
	Reads []string
	// RequestOnly is true when every key it reads is a request fact: the
	// gate can decide it before anything runs.
	RequestOnly bool
	prog        cel.Program
}

// Program is a capability's compiled contract.
type Program struct {
	Pre, Post []*Compiled
}

// Clauses returns the compiled clauses of one phase.
func (p *Program) Clauses(ph Phase) []*Compiled {
	if p == nil {
		return nil
	}
	if ph == Pre {
		return p.Pre
	}
	return p.Post
}

// Compile compiles every clause of c for a capability of the given kind and
// parameters. It fails on the first clause that does not compile; Check
// reports them all.
func Compile(c *Contract, kind string, params []Param) (*Program, error) {
	return compile(nil, c, kind, params)
}

// compile is Compile, each clause through the cache (nil: none).
func compile(cache *Cache, c *Contract, kind string, params []Param) (*Program, error) {
	p := &Program{}
	if c == nil {
		return p, nil
	}
	for _, ph := range []Phase{Pre, Post} {
		for _, cl := range c.Clauses(ph) {
			cc, err := compileIn(cache, kind, ph, params, cl)
			if err != nil {
				return nil, fmt.Errorf("%s clause %q: %w", ph, cl.Name, err)
			}
			if ph == Pre {
				p.Pre = append(p.Pre, cc)
			} else {
				p.Post = append(p.Post, cc)
			}
		}
	}
	return p, nil
}

func compileClause(kind string, ph Phase, params []Param, cl Clause) (*Compiled, error) {
	scopes, err := scopesFor(kind, ph)
	if err != nil {
		return nil, err
	}
	env, err := clauseEnv(kind, ph, scopes, params)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cl.Expr) == "" {
		return nil, errors.New("the expression is empty")
	}
	checked, iss := env.Compile(cl.Expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("does not compile against %s (%s clauses of a %s may read %s): %s%s",
			schemaFor(kind), ph, kind, readableList(kind, scopes), oneLine(iss.Err().Error()), outOfScope(kind, ph, scopes, iss.Err().Error()))
	}
	if !checked.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("is a %s, not a bool: a clause must say true or false", checked.OutputType())
	}
	if err := mapLoops(checked, kind); err != nil {
		return nil, err
	}
	var estimator cost.Estimator = sizeEstimator{}
	if kind == ToolKind {
		estimator = toolSizeEstimator{}
	}
	est, err := env.EstimateCost(checked, estimator)
	if err != nil {
		return nil, fmt.Errorf("cost estimate: %w", err)
	}
	if est.Max > MaxEstimatedCost {
		hint := fmt.Sprintf("lists and maps of %d elements assumed", sizeHint)
		if kind == ToolKind {
			hint = fmt.Sprintf("lists, maps and strings of %d elements assumed", toolSizeHint)
		}
		return nil, fmt.Errorf("its worst-case cost %d exceeds the limit %d (%s): simplify it", est.Max, MaxEstimatedCost, hint)
	}
	prog, err := env.Program(checked, cel.CostLimit(MaxCost), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("program: %w", err)
	}
	reads := referenced(checked, kind)
	only := true
	for _, r := range reads {
		if keyScope(kind, r) != ScopeRequest {
			only = false
		}
	}
	return &Compiled{Clause: cl, Phase: ph, Reads: reads, RequestOnly: only, prog: prog}, nil
}

// clauseEnv is the CEL environment of a kind's clauses of one phase.
func clauseEnv(kind string, ph Phase, scopes []Scope, params []Param) (*cel.Env, error) {
	if kind == ToolKind {
		// A tool's state is JSON: its objects are iterated in key order
		// (jsonAdapter), so a comprehension over a nested object decides
		// the same way on every run; read() looks up the session's state.
		return toolEnv(ph)
	}
	base, err := baseEnv()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	decls, err := declarations(kind, scopes, params)
	if err != nil {
		return nil, err
	}
	env, err := base.Extend(decls...)
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	return env, nil
}

// mapLoops refuses a comprehension over a map: Go hands CEL a map's keys
// in random order, so exists, all, map or filter over one could decide
// differently (or stop at the cost limit at another key) from one run to
// the next, and a verdict must be a function of the state alone. (A
// tool's JSON objects nested in its keys are typed dyn, not map, and are
// iterated in key order at run time: see jsonAdapter.)
func mapLoops(a *cel.Ast, kind string) error {
	nat := a.NativeRep()
	for _, e := range ast.MatchDescendants(ast.NavigateAST(nat), ast.KindMatcher(ast.ComprehensionKind)) {
		r := e.AsComprehension().IterRange()
		if t := nat.GetType(r.ID()); t != nil && t.Kind() == types.MapKind {
			if kind == ToolKind {
				return errors.New("iterates over a map, whose order is not fixed: test keys with has() or in instead (e.g. has(arguments.limit), 'path' in arguments)")
			}
			return errors.New("iterates over a map, whose order is not fixed: iterate over a list instead (e.g. data.columns.all(c, data.na_share[c] < 0.5))")
		}
	}
	return nil
}

// referenced lists the declared variables an expression names.
func referenced(a *cel.Ast, kind string) []string {
	var out []string
	for _, r := range a.NativeRep().ReferenceMap() {
		if r != nil && len(r.OverloadIDs) == 0 && declared(kind, r.Name) && !slices.Contains(out, r.Name) {
			out = append(out, r.Name)
		}
	}
	sort.Strings(out)
	return out
}

// declared reports whether name is a state key of the kind's schema or a
// parameter (and not, say, a comprehension's iteration variable).
func declared(kind, name string) bool {
	if strings.HasPrefix(name, "params.") {
		return true
	}
	for _, k := range keysFor(kind) {
		if k.Name == name {
			return true
		}
	}
	return false
}

// sizeEstimator sizes every list, map and string of the state at
// sizeHint, so the estimate is finite and comprehensions over columns are
// priced.
type sizeEstimator struct{}

func (sizeEstimator) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if len(n.Path()) == 0 {
		return nil
	}
	if t := n.Type(); t != nil && t.IsExactType(cel.StringType) {
		return &cost.SizeEstimate{Min: 0, Max: stringHint}
	}
	return &cost.SizeEstimate{Min: 0, Max: sizeHint}
}

func (sizeEstimator) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// toolSizeEstimator sizes every list, map and string of a tool's state at
// toolSizeHint, so a comprehension over a result's content, with a string
// function in its body, is priced as a result of a few hundred items. What
// read() returns, and what is selected from it, is JSON of the state's
// unknown shape too: every value CEL cannot size is sized so.
type toolSizeEstimator struct{}

func (toolSizeEstimator) EstimateSize(cost.AstNode) *cost.SizeEstimate {
	return &cost.SizeEstimate{Min: 0, Max: toolSizeHint}
}

func (toolSizeEstimator) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// readableList says what a clause may read: its scopes, and for a tool
// (whose schema is four keys) the keys themselves.
func readableList(kind string, ss []Scope) string {
	if kind != ToolKind {
		return scopeList(ss)
	}
	var names []string
	for _, k := range ToolKeys() {
		if slices.Contains(ss, k.Scope) {
			names = append(names, k.Name)
		}
	}
	return scopeList(ss) + " (" + strings.Join(names, ", ") + ")"
}

// outOfScope explains a compile error that names a key of the kind's
// schema the clause's phase may not read: "undeclared reference" alone
// would suggest a misspelling.
func outOfScope(kind string, ph Phase, ss []Scope, msg string) string {
	for _, k := range keysFor(kind) {
		if !slices.Contains(ss, k.Scope) && strings.Contains(msg, "undeclared reference to '"+k.Name+"'") {
			return fmt.Sprintf("; %s is a %s key, which %s clauses of a %s may not read", k.Name, k.Scope, ph, kind)
		}
	}
	return ""
}

func scopeList(ss []Scope) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}
