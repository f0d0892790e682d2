package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/policy/smt"
)

// Solver is what checks need from an SMT solver: one query, one answer.
// *smt.Pool is the implementation.
type Solver interface {
	Check(ctx context.Context, q smt.Query) (smt.Result, error)
}

var _ Solver = (*smt.Pool)(nil)

// shrinker minimises a core by deletion in one solver session
// (smt.Pool.Shrink); a Solver without it is asked one query per step.
type shrinker interface {
	Shrink(ctx context.Context, q smt.Query, parts []smt.Part) ([]string, error)
}

var _ shrinker = (*smt.Pool)(nil)

// corer checks a query with parts and shrinks the core in one solver
// session (smt.Pool.Core): a refusal's explanation then costs one query,
// not a check followed by a shrink.
type corer interface {
	Core(ctx context.Context, q smt.Query, parts []smt.Part) (smt.Status, []string, error)
}

var _ corer = (*smt.Pool)(nil)

// DefaultTimeout bounds one solver query of a check.
const DefaultTimeout = 2 * time.Second

// Checker decides requests against policies with a solver.
type Checker struct {
	solver  Solver
	timeout time.Duration
}

// NewChecker returns a checker that asks s, each query bounded by timeout
// (zero means DefaultTimeout).
func NewChecker(s Solver, timeout time.Duration) *Checker {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Checker{solver: s, timeout: timeout}
}

// Reasons a policy refuses a request.
const (
	// ReasonViolated: at the witness point the policy's rules (the core)
	// forbid allow, or contradict each other.
	ReasonViolated = "violated"
	// ReasonUndetermined: at the witness point allow is not entailed, yet not
	// contradicted either: it depends on constants no pointer binds. (The
	// paper's satisfiability semantics would have admitted this request.)
	ReasonUndetermined = "undetermined"
	// ReasonMissing: the policy binds a field the request does not give.
	ReasonMissing = "missing"
	// ReasonType: a request value does not fit the bound constant's sort.
	ReasonType = "type"
	// ReasonUndecided: the solver could not decide in time (or said
	// unknown): what cannot be decided is not admitted.
	ReasonUndecided = "undecided"
)

// Refusal is one policy's refusal of a request.
type Refusal struct {
	Policy string `json:"policy"`
	Reason string `json:"reason"`
	// Core lists the :named assertions of the unsat core at the witness
	// point (empty when the rules that conflict are unnamed or none do).
	Core []string `json:"core"`
	// Witness is the grid point the policy refuses: each bound constant,
	// its pointer and its value there.
	Witness []Assignment `json:"witness,omitempty"`
	Detail  string       `json:"detail"`
	// Next is the call that would supply a value the policy needs and the
	// session's state lacks: set on a ReasonMissing refusal whose derived
	// constant read() a result the state does not hold.
	Next *contract.Call `json:"next,omitempty"`
}

// Assignment is one bound constant's value at a grid point.
type Assignment struct {
	Const   string `json:"const"`
	Pointer string `json:"pointer"`
	Value   Value  `json:"value"`
}

// MarshalJSON writes a value as the JSON number or string it came from.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.IsBool {
		return []byte(strconv.FormatBool(v.Bool)), nil
	}
	if v.IsStr {
		return []byte(strconv.Quote(v.Str)), nil
	}
	if v.Exact != "" {
		return []byte(v.Exact), nil
	}
	return []byte(jsonNumber(v.Num)), nil
}

// axis is one pointer's values in a request, shared by every policy that
// binds it, so a witness is one grid point for all of them.
type axis struct {
	ptr    Pointer
	values []Value
	index  string // the index constant when the pointer spans the grid
}

// Check decides req against the policies cs (those that govern it) and
// returns their refusals, one per refusing policy, in cs's order. The whole
// grid is decided in one solver query when every policy admits it. An error
// means the solver failed (ErrSolver) or ctx ended, never a verdict: the
// caller must not admit the request.
func (k *Checker) Check(ctx context.Context, cs []*Compiled, req Request) ([]Refusal, error) {
	if load := req.Facts; load != nil {
		var (
			facts  map[string]Value
			err    error
			loaded bool
		)
		req.Facts = func() (map[string]Value, error) {
			if !loaded {
				facts, err = load()
				loaded = true
			}
			return facts, err
		}
	}
	axes := map[string]*axis{}
	var axisOrder []*axis
	refused := make([]*Refusal, len(cs))
	var open []int
	dv := map[*Compiled][]derivedValue{}
	var (
		callState contract.State
		callErr   error
		built     bool
	)
	callStateOf := func() (contract.State, error) {
		if !built {
			built = true
			if req.Tool == "" {
				callErr = errors.New("the request is not a tool call")
			} else {
				callState, callErr = contract.ToolStateIn(req.Tool, req.Arguments, nil, req.Session)
			}
		}
		return callState, callErr
	}
	for i, c := range cs {
		ok := true
		for _, b := range c.bound {
			ax, seen := axes[b.Ptr.Text]
			if !seen {
				vals, err := req.values(b.Ptr)
				if err != nil {
					var ve *valueError
					if errors.As(err, &ve) {
						refused[i] = &Refusal{Policy: c.Name, Reason: ReasonType, Core: []string{},
							Detail: fmt.Sprintf("policy %s binds %s to %s: %v", c.Name, b.Const, b.Ptr.Text, err)}
					} else {
						refused[i] = &Refusal{Policy: c.Name, Reason: ReasonMissing, Core: []string{},
							Detail: fmt.Sprintf("policy %s binds %s to %s: %v; set it", c.Name, b.Const, b.Ptr.Text, err)}
					}
					ok = false
					break
				}
				ax = &axis{ptr: b.Ptr, values: vals}
				if len(vals) > 1 {
					ax.index = fmt.Sprintf("%si.%d", reserved, len(axisOrder))
				}
				axes[b.Ptr.Text] = ax
				axisOrder = append(axisOrder, ax)
			}
			for _, v := range ax.values {
				if _, err := literal(v, b.Sort); err != nil {
					refused[i] = &Refusal{Policy: c.Name, Reason: ReasonType, Core: []string{},
						Witness: []Assignment{{Const: b.Const, Pointer: b.Ptr.Text, Value: v}},
						Detail:  fmt.Sprintf("policy %s binds %s to %s: %v", c.Name, b.Const, b.Ptr.Text, err)}
					ok = false
					break
				}
			}
			if !ok {
				break
			}
		}
		if ok && len(c.derived) > 0 {
			vals, r := deriveValues(c, callStateOf)
			if r != nil {
				refused[i] = r
				ok = false
			}
			dv[c] = vals
		}
		if ok {
			open = append(open, i)
		}
	}

	// Find the refusing policies: each round asks for a grid point where
	// some open policy does not entail allow; the policies refusing there
	// are explained and leave the round. Admission costs one query.
	for len(open) > 0 {
		q, bad := gridQuery(cs, open, axes, axisOrder, dv)
		q.Timeout = k.timeout
		res, err := k.solver.Check(ctx, q)
		if err != nil {
			if ctx.Err() != nil {
				// The caller gave up (or its deadline passed waiting for a
				// solver): no verdict, nothing to record.
				return nil, fmt.Errorf("policy: %w", ctx.Err())
			}
			if undecided(err) {
				for _, i := range open {
					refused[i] = undecidedRefusal(cs[i].Name, err)
				}
				break
			}
			return nil, solverErr(err)
		}
		if res.Status == smt.Unsat {
			break
		}
		if res.Status != smt.Sat {
			for _, i := range open {
				refused[i] = undecidedRefusal(cs[i].Name, errors.New("the solver answered unknown"))
			}
			break
		}
		point, err := witnessPoint(res.Model, axisOrder)
		if err != nil {
			return nil, solverErr(err)
		}
		var still []int
		found := false
		for j, i := range open {
			if res.Model[bad[j]] != "true" {
				still = append(still, i)
				continue
			}
			found = true
			// One request, one record: the witness is the policy's least
			// violating grid point and the core a deterministic minimal
			// one, whatever model or core the solver happened to give.
			at, err := k.leastPoint(ctx, cs, i, axes, axisOrder, point, dv)
			if err != nil {
				if ctx.Err() != nil {
					return nil, fmt.Errorf("policy: %w", ctx.Err())
				}
				if !undecided(err) {
					return nil, solverErr(err)
				}
				refused[i] = undecidedRefusal(cs[i].Name, err)
				continue
			}
			r, err := k.explain(ctx, cs[i], axes, at, dv[cs[i]])
			if err != nil {
				return nil, err
			}
			refused[i] = &r
		}
		if !found {
			return nil, fmt.Errorf("%w: the solver's model marks no policy as refusing", ErrSolver)
		}
		open = still
	}
	var out []Refusal
	for _, r := range refused {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out, nil
}

func undecided(err error) bool {
	return errors.Is(err, smt.ErrTimeout) || errors.Is(err, smt.ErrBadQuery)
}

func undecidedRefusal(name string, err error) *Refusal {
	what := "the solver could not decide it"
	if errors.Is(err, smt.ErrTimeout) {
		what = "the solver could not decide it in time"
	} else if errors.Is(err, smt.ErrBadQuery) {
		what = "the solver refused the policy"
	}
	// The solver's own words (line numbers, its name) vary between runs and
	// solvers; the record keeps only what is decided.
	return &Refusal{Policy: name, Reason: ReasonUndecided, Core: []string{},
		Detail: fmt.Sprintf("policy %s: %s; what cannot be decided is not admitted: narrow the grid, or ask the policy's administrator", name, what)}
}

// gridQuery builds the one query whose models are the grid points some
// open policy refuses. Policy i's symbols are renamed "p<i>." so policies
// cannot see each other; the bound constants of every policy read the same
// grid index per pointer. A policy refuses a point when its assertions A
// hold with allow false, or cannot hold at all (entailment from
// contradictory rules would admit anything):
//
//	bad_i = (or (forall (F) (not A)) (and A (not allow)))
//
// where F are its free constants (allow among them when declared).
func gridQuery(cs []*Compiled, open []int, axes map[string]*axis, order []*axis, dv map[*Compiled][]derivedValue) (smt.Query, []string) {
	var b strings.Builder
	var values []string
	used := map[*axis]bool{}
	for _, i := range open {
		for _, bd := range cs[i].bound {
			used[axes[bd.Ptr.Text]] = true
		}
	}
	for _, ax := range order {
		if ax.index != "" && used[ax] {
			fmt.Fprintf(&b, "(declare-const %s Int)\n(assert (and (<= 0 %s) (< %s %d)))\n", ax.index, ax.index, ax.index, len(ax.values))
			values = append(values, ax.index)
		}
	}
	// A grid axis's value is written once per sort and named, so the query
	// grows with the grid plus the policies, not with their product (256
	// policies binding one 64-value list would otherwise pass MaxQueryBytes).
	shared := map[string]string{} // pointer + sort → defined name
	for _, i := range open {
		for _, bd := range cs[i].bound {
			ax := axes[bd.Ptr.Text]
			key := bd.Ptr.Text + "\x00" + bd.Sort
			if ax.index == "" || shared[key] != "" {
				continue
			}
			name := fmt.Sprintf("%sa.%d", reserved, len(shared))
			fmt.Fprintf(&b, "(define-fun %s () %s %s)\n", name, bd.Sort, axisTerm(ax, bd.Sort))
			shared[key] = name
		}
	}
	bad := make([]string, len(open))
	for j, i := range open {
		c := cs[i]
		pre := fmt.Sprintf("%sp%d.", reserved, i)
		terms := map[string]string{}
		for _, bd := range c.bound {
			if name := shared[bd.Ptr.Text+"\x00"+bd.Sort]; name != "" {
				terms[bd.Const] = name
			} else {
				terms[bd.Const] = axisTerm(axes[bd.Ptr.Text], bd.Sort)
			}
		}
		for _, x := range dv[c] {
			terms[x.A.Const] = x.lit
		}
		rt := c.renamedText(pre)
		c.writeRenamed(&b, rt, terms)
		bad[j] = fmt.Sprintf("%sbad.%d", reserved, i)
		fmt.Fprintf(&b, "(declare-const %s Bool)\n(assert (= %s %s))\n", bad[j], bad[j], rt.refuses)
		values = append(values, bad[j])
	}
	b.WriteString("(assert (or")
	for _, x := range bad {
		b.WriteString(" " + x)
	}
	b.WriteString("))\n")
	return smt.Query{Commands: b.String(), Values: values}, bad
}

// refuses is the term "this policy does not entail allow here", over the
// policy's symbols renamed by ren.
func (c *Compiled) refuses(ren func(string) string) string {
	a := c.conjunction(ren)
	allow := smt.SymbolText(ren(c.allow))
	free := c.binders(ren)
	if free == "" {
		return fmt.Sprintf("(or (not %s) (not %s))", a, allow)
	}
	return fmt.Sprintf("(or (forall (%s) (not %s)) (and %s (not %s)))", free, a, a, allow)
}

// admits is the term "this policy entails allow here, and its rules can
// hold": the negation of refuses, with the free constants quantified
// inside, so it can sit beside other policies' terms.
func (c *Compiled) admits(ren func(string) string) string {
	a := c.conjunction(ren)
	allow := smt.SymbolText(ren(c.allow))
	free := c.binders(ren)
	if free == "" {
		return fmt.Sprintf("(and %s %s)", a, allow)
	}
	return fmt.Sprintf("(and (exists (%s) %s) (forall (%s) (=> %s %s)))", free, a, free, a, allow)
}

// conjunction is (and A…) of the policy's assertions, names removed.
func (c *Compiled) conjunction(ren func(string) string) string {
	switch len(c.asserts) {
	case 0:
		return "true"
	case 1:
		return c.asserts[0].Term.Rename(c.symbols, ren).String()
	}
	var b strings.Builder
	b.WriteString("(and")
	for _, a := range c.asserts {
		b.WriteString(" " + a.Term.Rename(c.symbols, ren).String())
	}
	b.WriteString(")")
	return b.String()
}

// binders lists the free constants as quantifier binders: "(x Int) (allow Bool)".
func (c *Compiled) binders(ren func(string) string) string {
	var parts []string
	for _, f := range c.free {
		parts = append(parts, fmt.Sprintf("(%s %s)", smt.SymbolText(ren(f)), c.sorts[f]))
	}
	return strings.Join(parts, " ")
}

// axisTerm is the pointer's value in sort: a literal, or at a grid an ite
// over the index. Check has verified every literal.
func axisTerm(ax *axis, sort string) string {
	if ax.index == "" {
		lit, _ := literal(ax.values[0], sort)
		return lit
	}
	n := len(ax.values)
	last, _ := literal(ax.values[n-1], sort)
	term := last
	for i := n - 2; i >= 0; i-- {
		lit, _ := literal(ax.values[i], sort)
		term = fmt.Sprintf("(ite (= %s %d) %s %s)", ax.index, i, lit, term)
	}
	return term
}

// witnessPoint reads the grid point of a model: the value index per axis.
func witnessPoint(model map[string]string, order []*axis) (map[*axis]int, error) {
	point := map[*axis]int{}
	for _, ax := range order {
		if ax.index == "" {
			point[ax] = 0
			continue
		}
		text, ok := model[ax.index]
		if !ok {
			continue // no open policy reads it
		}
		n, err := strconv.Atoi(text)
		if err != nil || n < 0 || n >= len(ax.values) {
			return nil, fmt.Errorf("the solver's model puts %s at %q, outside the grid", ax.index, text)
		}
		point[ax] = n
	}
	return point, nil
}

// explain asks why c refuses the request at point: with every bound
// constant fixed, is allow consistent with the rules? If not, the unsat
// core names the rules that forbid it; if it is, allow depends on the
// unbound constants.
func (k *Checker) explain(ctx context.Context, c *Compiled, axes map[string]*axis, point map[*axis]int, dv []derivedValue) (Refusal, error) {
	var b strings.Builder
	var witness []Assignment
	terms := map[string]string{}
	var spans []Assignment
	for _, bd := range c.bound {
		ax := axes[bd.Ptr.Text]
		v := ax.values[point[ax]]
		terms[bd.Const], _ = literal(v, bd.Sort)
		a := Assignment{Const: bd.Const, Pointer: bd.Ptr.Text, Value: v}
		if ax.index != "" {
			spans = append(spans, a)
		} else {
			witness = append(witness, a)
		}
	}
	// The values the grid spans come first: they are what an agent changes;
	// the derived values last.
	witness = append(spans, witness...)
	for _, x := range dv {
		terms[x.A.Const] = x.lit
		witness = append(witness, x.A)
	}
	c.writeRenamed(&b, c.renamedText(""), terms)
	prefix := b.String()
	if co, ok := k.solver.(corer); ok && len(c.Rules()) <= maxShrink {
		return k.explainCore(ctx, co, c, prefix, witness)
	}
	for _, a := range c.asserts {
		if a.Name != "" {
			fmt.Fprintf(&b, "(assert (! %s :named %s))\n", a.Term.String(), smt.SymbolText(a.Name))
		} else {
			fmt.Fprintf(&b, "(assert %s)\n", a.Term.String())
		}
	}
	res, err := k.solver.Check(ctx, smt.Query{Commands: b.String(), Goal: smt.SymbolText(c.allow), Values: []string{}, Timeout: k.timeout})
	if err != nil {
		return c.undecidedAt(err, witness)
	}
	var core []string
	if res.Status == smt.Unsat {
		core, err = k.minimalCore(ctx, c, prefix, smt.SymbolText(c.allow), res.Core)
		if err != nil {
			if ctx.Err() != nil {
				return Refusal{}, solverErr(err)
			}
			return c.undecidedAt(err, witness)
		}
	}
	return c.refusal(res.Status, core, witness), nil
}

// undecidedAt answers a solver error while explaining c's refusal at
// witness: undecided when the solver could not decide (a timeout, a query
// it refused), else the error.
func (c *Compiled) undecidedAt(err error, witness []Assignment) (Refusal, error) {
	if !undecided(err) {
		return Refusal{}, solverErr(err)
	}
	r := undecidedRefusal(c.Name, err)
	r.Witness = witness
	return *r, nil
}

// refusal words c's refusal at witness from the solver's answer with
// allow asserted: unsat with the minimal core, sat (undetermined), or
// undecided.
func (c *Compiled) refusal(status smt.Status, core []string, witness []Assignment) Refusal {
	at := describePoint(witness)
	r := Refusal{Policy: c.Name, Core: []string{}, Witness: witness}
	switch status {
	case smt.Unsat:
		r.Reason = ReasonViolated
		r.Core = append(r.Core, core...)
		var rules []string
		for _, n := range r.Core {
			rules = append(rules, fmt.Sprintf("%s %s", n, clipRule(c.Rule(n))))
		}
		if len(rules) == 0 {
			r.Detail = fmt.Sprintf("policy %s refuses %s: %s", c.Name, at, c.unnamedReason())
		} else {
			r.Detail = fmt.Sprintf("policy %s refuses %s: %s", c.Name, at, strings.Join(rules, "; "))
		}
	case smt.Sat:
		r.Reason = ReasonUndetermined
		r.Detail = fmt.Sprintf("policy %s does not entail %s at %s: it depends on %s, which no pointer binds, and must hold for every value of them",
			c.Name, c.allow, at, strings.Join(c.Unbound(), ", "))
	default:
		return *undecidedRefusal(c.Name, errors.New("the solver answered unknown"))
	}
	return r
}

// explainCore is explain in one solver session: the check of the rules
// with allow, and when they refuse it the core minimised by deletion over
// every named rule (what minimalCore does when they number at most
// maxShrink, and the only case it is asked for).
func (k *Checker) explainCore(ctx context.Context, co corer, c *Compiled, prefix string, witness []Assignment) (Refusal, error) {
	q, parts := c.coreQuery(prefix, smt.SymbolText(c.allow), c.Rules())
	q.Timeout = k.timeout
	status, core, err := co.Core(ctx, q, parts)
	if err != nil {
		return c.undecidedAt(err, witness)
	}
	sort.Strings(core)
	return c.refusal(status, core, witness), nil
}

func describePoint(w []Assignment) string {
	if len(w) == 0 {
		return "every request"
	}
	parts := make([]string, len(w))
	for i, a := range w {
		parts[i] = fmt.Sprintf("%s=%s", FieldName(a.Pointer), a.Value)
	}
	return strings.Join(parts, " ")
}

// FieldName writes a pointer as the request field it names: /params/x →
// params.x, /facts/data/rows → data.rows, /tool → tool,
// /grounding/confidence → grounding.confidence, and a pointer
// into a call's arguments as "arguments" followed by it, escapes kept:
// /arguments/options/depth → arguments/options/depth.
func FieldName(ptr string) string {
	if name, ok := strings.CutPrefix(ptr, "/derive/"); ok {
		return "derive." + name
	}
	p, err := ParsePointer(ptr)
	if err != nil {
		return ptr
	}
	switch p.Field {
	case "params":
		return "params." + p.Param
	case "grid/points":
		return "grid.points"
	case "facts":
		return "data." + p.Param
	case "arguments":
		return "arguments" + p.Param
	case "grounding":
		return "grounding." + p.Param
	}
	return p.Field
}

// Field is the request field a refusal is about: its first witness
// pointer's field, or "request".
func (r Refusal) Field() string {
	if len(r.Witness) == 0 {
		return "request"
	}
	return FieldName(r.Witness[0].Pointer)
}

func clipRule(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// Validate has the solver read the policy: what Compile cannot see (an
// ill-sorted term, an unknown function) is refused at write, not at the
// first request it governs. The solver reads the terms the checker will
// assert, conjoined with false: sorts are checked as terms are read, and
// no search runs (a policy hard to decide with its constants free may be
// easy with them bound, as every check binds them).
func (k *Checker) Validate(ctx context.Context, c *Compiled) error {
	ren := func(s string) string { return reserved + "v." + s }
	var b strings.Builder
	for _, cmd := range c.commands {
		b.WriteString(cmd.Rename(c.symbols, ren).String())
		b.WriteByte('\n')
	}
	goal := fmt.Sprintf("(and false %s %s)", c.refuses(ren), c.admits(ren))
	_, err := k.solver.Check(ctx, smt.Query{Commands: b.String(), Goal: goal, Values: []string{}, Timeout: k.timeout})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, smt.ErrBadQuery):
		return invalid(c.Name, "smtlib", "%s", strings.ReplaceAll(err.Error(), reserved+"v.", ""))
	}
	return solverErr(err)
}

// solverErr words a solver failure: ErrNoSolver when it is not installed,
// ErrSolver otherwise. Neither is a verdict.
func solverErr(err error) error {
	if errors.Is(err, smt.ErrNotInstalled) {
		return fmt.Errorf("%w: %w", ErrNoSolver, err)
	}
	return fmt.Errorf("%w: %w", ErrSolver, err)
}

// UnmarshalJSON reads a number (its exact decimal kept, as MarshalJSON
// writes it), a string or a boolean.
func (v *Value) UnmarshalJSON(b []byte) error {
	var x jsontext.Value
	if err := hashing.DecodePart(b, &x); err != nil {
		return errors.New(hashing.Reason(err))
	}
	switch k := x.Kind(); k {
	case '0':
		n, err := NumberValue(strings.TrimSpace(string(x)))
		if err != nil {
			return fmt.Errorf("policy: %v", err)
		}
		*v = n
	case '"':
		var s string
		if err := hashing.DecodePart(x, &s); err != nil {
			return errors.New(hashing.Reason(err))
		}
		*v = Str(s)
	case 't', 'f':
		*v = Boolean(k == 't')
	default:
		return fmt.Errorf("policy: a value is a number, a string or a boolean, not %s", clip(string(b)))
	}
	return nil
}

// unnamedReason says what forbids allow when the core names no assertion:
// allow's own definition, or assertions without names.
func (c *Compiled) unnamedReason() string {
	for _, cmd := range c.commands {
		if cmd.Head() == "define-fun" {
			if sym, _ := cmd.List[1].Symbol(); sym == c.allow {
				return fmt.Sprintf("%s %s does not hold there", c.allow, clipRule(cmd.List[4].String()))
			}
		}
	}
	return "its unnamed assertions forbid it (name them with (! … :named n) to see which)"
}

// renamed is a policy's query text with its symbols prefixed: each
// command as writeCommands writes it when no term replaces it, and the
// term refuses gives, quantifiers expanded. It depends on the policy and
// the prefix alone, so a check reuses it (parsing, renaming and
// expanding a policy's text cost a few hundred µs, a check's grid query
// itself about as much).
type renamed struct {
	cmds []string // each command, renamed
	// consts[i] is command i's constant when it is a declare-const (a
	// term may define it instead), with its renamed symbol in names[i].
	consts, names []string
	refuses       string
}

// renamedText is c's text under prefix pre, made once per prefix (the
// gate's prefixes are a policy's place in the set: a few per policy).
func (c *Compiled) renamedText(pre string) *renamed {
	if v, ok := c.texts.Load(pre); ok {
		return v.(*renamed)
	}
	ren := func(s string) string { return pre + s }
	r := &renamed{consts: make([]string, len(c.commands)), names: make([]string, len(c.commands))}
	for i, cmd := range c.commands {
		if cmd.Head() == "declare-const" {
			sym, _ := cmd.List[1].Symbol()
			r.consts[i], r.names[i] = sym, smt.SymbolText(ren(sym))
		}
		r.cmds = append(r.cmds, cmd.Rename(c.symbols, ren).String())
	}
	r.refuses = expandBool(c.refuses(ren))
	v, _ := c.texts.LoadOrStore(pre, r)
	return v.(*renamed)
}

// writeRenamed writes the policy's declarations and helpers from r, its
// text under r's prefix, with each bound constant defined as its term
// instead of declared: (define-fun c () Sort term). Solvers expand
// definitions before solving, so helpers over request values fold to
// constants — z3 4.8 takes ~1 ms per string operation on a declared
// constant held equal to a literal, and nothing on the literal itself.
func (c *Compiled) writeRenamed(b *strings.Builder, r *renamed, terms map[string]string) {
	for i, text := range r.cmds {
		if sym := r.consts[i]; sym != "" {
			if t, ok := terms[sym]; ok {
				fmt.Fprintf(b, "(define-fun %s () %s %s)\n", r.names[i], c.sorts[sym], t)
				continue
			}
		}
		b.WriteString(text)
		b.WriteByte('\n')
	}
}

// errUndecided is a solver's unknown on a question the checker must answer.
var errUndecided = fmt.Errorf("%w: the solver answered unknown", smt.ErrTimeout)

// leastPoint moves policy i's witness to its least violating grid point:
// axis by axis in request order, the smallest index for which some
// violating point remains (a binary search below the index known to
// violate). It costs O(axes · log(values)) queries, on refusals only.
func (k *Checker) leastPoint(ctx context.Context, cs []*Compiled, i int, axes map[string]*axis, order []*axis, point map[*axis]int, dv map[*Compiled][]derivedValue) (map[*axis]int, error) {
	base, _ := gridQuery(cs, []int{i}, axes, order, dv)
	best := maps.Clone(point)
	var fixed strings.Builder
	for _, ax := range order {
		if ax.index == "" || !strings.Contains(base.Commands, "(declare-const "+ax.index+" ") {
			continue
		}
		lo, hi := 0, best[ax]
		for lo < hi {
			mid := (lo + hi) / 2
			q := base
			q.Commands += fixed.String() + fmt.Sprintf("(assert (<= %s %d))\n", ax.index, mid)
			q.Timeout = k.timeout
			res, err := k.solver.Check(ctx, q)
			if err != nil {
				return nil, err
			}
			switch res.Status {
			case smt.Sat:
				m, err := witnessPoint(res.Model, order)
				if err != nil {
					return nil, err
				}
				for a, v := range m {
					if a.index != "" {
						best[a] = v
					}
				}
				hi = best[ax]
			case smt.Unsat:
				lo = mid + 1
			default:
				return nil, errUndecided
			}
		}
		fmt.Fprintf(&fixed, "(assert (= %s %d))\n", ax.index, best[ax])
	}
	return best, nil
}

// coreQuery is the query a core is minimised in: prefix, the unnamed
// assertions and goal, and as parts the named assertions in keep, in
// source order.
func (c *Compiled) coreQuery(prefix, goal string, keep []string) (smt.Query, []smt.Part) {
	var b strings.Builder
	b.WriteString(prefix)
	var parts []smt.Part
	for _, a := range c.asserts {
		switch {
		case a.Name == "":
			fmt.Fprintf(&b, "(assert %s)\n", a.Term.String())
		case slices.Contains(keep, a.Name):
			parts = append(parts, smt.Part{Name: a.Name, Term: a.Term.String()})
		}
	}
	return smt.Query{Commands: b.String(), Goal: goal, Values: []string{}}, parts
}

// maxShrink bounds the named assertions a core is minimised over by
// deletion; beyond it the solver's own core is the start.
const maxShrink = 24

// minimalCore shrinks an unsat core to the minimal one that deletion in
// source order gives: starting from every named assertion (or, past
// maxShrink, from the solver's core), drop each in turn and keep it out
// if what remains is still unsat. The answer depends on the policy and the
// point alone, not on which core a solver returned.
func (k *Checker) minimalCore(ctx context.Context, c *Compiled, prefix, goal string, solverCore []string) ([]string, error) {
	var keep []string
	all := len(c.Rules()) <= maxShrink
	for _, a := range c.asserts {
		if a.Name != "" && (all || slices.Contains(solverCore, a.Name)) {
			keep = append(keep, a.Name)
		}
	}
	if sh, ok := k.solver.(shrinker); ok {
		// The same deletion, in one solver session.
		q, parts := c.coreQuery(prefix, goal, keep)
		q.Timeout = k.timeout
		kept, err := sh.Shrink(ctx, q, parts)
		if err != nil {
			return nil, err
		}
		sort.Strings(kept)
		return kept, nil
	}
	for j := 0; j < len(keep); {
		trial := append(append([]string{}, keep[:j]...), keep[j+1:]...)
		var b strings.Builder
		b.WriteString(prefix)
		for _, a := range c.asserts {
			if a.Name == "" || slices.Contains(trial, a.Name) {
				fmt.Fprintf(&b, "(assert %s)\n", a.Term.String())
			}
		}
		res, err := k.solver.Check(ctx, smt.Query{Commands: b.String(), Goal: goal, Values: []string{}, Timeout: k.timeout})
		if err != nil {
			return nil, err
		}
		switch res.Status {
		case smt.Unsat:
			keep = trial // not needed
		case smt.Sat:
			j++ // needed
		default:
			return nil, errUndecided
		}
	}
	sort.Strings(keep)
	return keep, nil
}
