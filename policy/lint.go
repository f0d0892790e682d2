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

	"github.com/groundgate/groundgate/policy/smt"
	"github.com/groundgate/groundgate/registry"
)

// LintReport is what lint finds in one policy (SPEC §10: POST
// /v1/policies/lint, groundgate policy lint). Every list is present, empty
// when there is nothing to say.
//
// With no request in view, the bound constants range over every value a
// request can give them: their sort, constants bound to one pointer held to
// one value, /grid/points from 1 to 4096 (the gate's limit), the counting
// facts (rows, assets, span_days, max_gap_days) at least 0, Int parameters
// within ±2^53.
type LintReport struct {
	Policy string `json:"policy"`
	// Vacuous: no request the policy governs is admitted — it blocks them
	// all (its rules contradict each other or allow).
	Vacuous bool `json:"vacuous"`
	// Tautological: no request the policy governs is refused — it never
	// blocks anything.
	Tautological bool `json:"tautological"`
	// Redundant lists the named assertions the policy's other assertions
	// imply: removing one changes no verdict and no refusal's reason.
	Redundant []string `json:"redundant"`
	// Unbound lists the declared constants no pointer binds (allow
	// excepted): entailment must hold for every value they take.
	Unbound []string `json:"unbound"`
	// Conflicts lists the policies this one can govern a request with, yet
	// never admits a request together with: every request both govern is
	// refused by one of them.
	Conflicts []Conflict `json:"conflicts"`
	// Undecided lists the questions the solver could not answer (in time,
	// or at all), as "what: why": "vacuous", "tautological",
	// "redundant NAME", "conflict with NAME". An undecided question is
	// reported as not found, never guessed.
	Undecided []string `json:"undecided"`
	// Clean: nothing above to report — unbound constants and undecided
	// questions included, since either can hide an under-constrained rule.
	Clean bool `json:"clean"`
}

// Conflict is one policy this one cannot admit a request together with.
type Conflict struct {
	With   string `json:"with"`
	Detail string `json:"detail"`
}

// Lint analyses c and its conflicts with others (a policy named like c is
// skipped: c would replace it). A solver that cannot decide a question
// puts it in the report's Undecided; an error means the solver failed or
// ctx ended.
func (k *Checker) Lint(ctx context.Context, c *Compiled, others []*Compiled) (LintReport, error) {
	cs := []*Compiled{c}
	for _, o := range others {
		if o != nil && o.Name != c.Name {
			cs = append(cs, o)
		}
	}
	reps, err := k.lint(ctx, cs, true)
	if err != nil {
		return LintReport{}, err
	}
	return reps[0], nil
}

// LintSet analyses every policy of a set, in cs's order. A conflict is
// decided once per pair and reported on both sides, so each report stands
// alone.
func (k *Checker) LintSet(ctx context.Context, cs []*Compiled) ([]LintReport, error) {
	return k.lint(ctx, cs, false)
}

// verdict is a lint question's answer: found, not found, or undecided (why).
type verdict struct {
	found bool
	why   string
}

// lint runs the questions: each policy's own (for cs[0] only when
// focus), then one conflict query per pair that can govern a request
// together (pairs with cs[0] only when focus). Queries are sequential:
// their number is O(len(cs)²) and each is bounded by the checker's timeout.
func (k *Checker) lint(ctx context.Context, cs []*Compiled, focus bool) ([]LintReport, error) {
	reps := make([]LintReport, len(cs))
	vac := make([]*verdict, len(cs)) // decided lazily: others need it only for conflicts
	vacuity := func(i int) (verdict, error) {
		if vac[i] == nil {
			v, err := k.vacuous(ctx, cs[i])
			if err != nil {
				return verdict{}, err
			}
			vac[i] = &v
		}
		return *vac[i], nil
	}
	for i, c := range cs {
		r := &reps[i]
		*r = LintReport{Policy: c.Name, Redundant: []string{}, Unbound: []string{}, Conflicts: []Conflict{}, Undecided: []string{}}
		r.Unbound = append(r.Unbound, c.Unbound()...)
		if focus && i > 0 {
			continue
		}
		v, err := vacuity(i)
		if err != nil {
			return nil, err
		}
		r.note(v, "vacuous", &r.Vacuous)
		v, err = k.tautological(ctx, c)
		if err != nil {
			return nil, err
		}
		r.note(v, "tautological", &r.Tautological)
		for _, a := range c.asserts {
			if a.Name == "" {
				continue
			}
			v, err := k.redundant(ctx, c, a.Name)
			if err != nil {
				return nil, err
			}
			var found bool
			r.note(v, "redundant "+a.Name, &found)
			if found {
				r.Redundant = append(r.Redundant, a.Name)
			}
		}
	}
	pairsFrom := len(cs) // the pairs (i, j>i) for i below it
	if focus {
		pairsFrom = 1
	}
	for i := range pairsFrom {
		for j := i + 1; j < len(cs); j++ {
			scope, ok := overlap(cs[i], cs[j])
			if !ok || !interact(cs[i], cs[j]) {
				continue
			}
			vi, err := vacuity(i)
			if err != nil {
				return nil, err
			}
			vj, err := vacuity(j)
			if err != nil {
				return nil, err
			}
			if vi.found || vj.found {
				continue // a vacuous policy is reported as such, not as a conflict with everything
			}
			v, detail, err := k.conflict(ctx, cs[i], cs[j], scope)
			if err != nil {
				return nil, err
			}
			if v.found && (vi.why != "" || vj.why != "") {
				// No common admission, but one side may admit nothing at all.
				v = verdict{why: "whether the policies are vacuous is undecided"}
			}
			for _, side := range [][2]int{{i, j}, {j, i}} {
				r := &reps[side[0]]
				var found bool
				r.note(v, "conflict with "+cs[side[1]].Name, &found)
				if found {
					r.Conflicts = append(r.Conflicts, Conflict{With: cs[side[1]].Name, Detail: detail(cs[side[0]], cs[side[1]])})
				}
			}
		}
	}
	for i := range reps {
		r := &reps[i]
		r.Clean = !r.Vacuous && !r.Tautological && len(r.Redundant) == 0 && len(r.Unbound) == 0 &&
			len(r.Conflicts) == 0 && len(r.Undecided) == 0
	}
	if focus {
		return reps[:1], nil
	}
	return reps, nil
}

func (r *LintReport) note(v verdict, what string, found *bool) {
	if v.why != "" {
		r.Undecided = append(r.Undecided, what+": "+v.why)
		return
	}
	*found = v.found
}

// vacuous: no governed request admitted. Asks for one that is.
func (k *Checker) vacuous(ctx context.Context, c *Compiled) (verdict, error) {
	q := newQuery([]*Compiled{c})
	p := q.place(c, reserved+"l.")
	return k.unsat(ctx, q, fmt.Sprintf("(and %s %s %s)", p.applies, p.fits, c.admits(p.ren)))
}

// tautological: no governed request refused. Asks for one that is.
func (k *Checker) tautological(ctx context.Context, c *Compiled) (verdict, error) {
	q := newQuery([]*Compiled{c})
	p := q.place(c, reserved+"l.")
	return k.unsat(ctx, q, fmt.Sprintf("(and %s %s %s)", p.applies, p.fits, c.refuses(p.ren)))
}

// redundant: the other assertions imply the named one, for every value of
// every constant (bound over the requests the policy governs, free ones
// over their sort). Then removing it changes nothing a check reports.
//
// A weaker test, "removing it changes no verdict", would flag the rules of
// a well-written policy: in (=> allow rule) plus (=> rules allow) the
// converse alone decides every verdict, while each (=> allow rule) is what
// makes a refusal "violated" with that rule in the core rather than
// "undetermined". Implication keeps every rule that explains something.
func (k *Checker) redundant(ctx context.Context, c *Compiled, name string) (verdict, error) {
	q := newQuery([]*Compiled{c})
	p := q.place(c, reserved+"l.")
	var goal string
	fmt.Fprintf(&q.b, "(assert %s)\n(assert %s)\n", p.applies, p.fits)
	for _, a := range c.asserts {
		t := a.Term.Rename(c.symbols, p.ren).String()
		if a.Name == name {
			goal = "(not " + t + ")"
			continue
		}
		fmt.Fprintf(&q.b, "(assert %s)\n", t)
	}
	return k.unsat(ctx, q, goal)
}

// conflict: no request in scope (both policies govern it) is admitted by
// both. It returns the detail writer for each side.
func (k *Checker) conflict(ctx context.Context, a, b *Compiled, scope func(fam, met string) string) (verdict, func(self, other *Compiled) string, error) {
	if ptr, sa, sb, clash := typeClash(a, b); clash {
		detail := func(self, other *Compiled) string {
			ss, so := sa, sb
			if self != a {
				ss, so = sb, sa
			}
			return fmt.Sprintf("%s binds %s as %s and %s as %s: no request value fits both, so every request both govern is refused by one of them",
				self.Name, ptr, ss, other.Name, so)
		}
		return verdict{found: true}, detail, nil
	}
	q := newQuery([]*Compiled{a, b})
	pa := q.place(a, reserved+"a.")
	pb := q.place(b, reserved+"b.")
	fmt.Fprintf(&q.b, "(assert %s)\n", scope(q.family, q.metric))
	v, err := k.unsat(ctx, q, fmt.Sprintf("(and %s %s %s %s)", pa.fits, pb.fits, a.admits(pa.ren), b.admits(pb.ren)))
	shared := sharedPointers(a, b)
	where := describeScope(a, b)
	detail := func(self, other *Compiled) string {
		s := fmt.Sprintf("no request %s is admitted by both %s and %s: every one %s admits, %s refuses", where, self.Name, other.Name, self.Name, other.Name)
		if len(shared) > 0 {
			s += " (both bind " + strings.Join(shared, ", ") + ")"
		}
		return s
	}
	return v, detail, err
}

// unsat asks whether the query with goal is unsatisfiable: found when it
// is; undecided (with why) on unknown, a timeout or a query the solver
// refuses. Other failures are errors.
func (k *Checker) unsat(ctx context.Context, q *query, goal string) (verdict, error) {
	res, err := k.solver.Check(ctx, smt.Query{Commands: q.b.String(), Goal: expandBool(goal), Values: []string{}, Timeout: k.timeout})
	if err != nil {
		if why, ok := undecidedWhy(err); ok {
			return verdict{why: why}, nil
		}
		return verdict{}, fmt.Errorf("%w: %w", ErrSolver, err)
	}
	switch res.Status {
	case smt.Unsat:
		return verdict{found: true}, nil
	case smt.Sat:
		return verdict{}, nil
	}
	return verdict{why: "the solver answered unknown"}, nil
}

// undecidedWhy words the failures that leave a question open rather than
// fail the analysis: a timeout, a query the solver refuses.
func undecidedWhy(err error) (string, bool) {
	switch {
	case errors.Is(err, smt.ErrTimeout):
		return "the solver could not decide it in time", true
	case errors.Is(err, smt.ErrBadQuery):
		return fmt.Sprintf("the solver refused the query (%v)", err), true
	}
	return "", false
}

// overlap decides whether two policies can govern one request, and if so
// the term that restricts the symbolic family and metric to such requests.
// A kind ("family", "metric") governs every request, so it overlaps
// anything, restricted by the other's applies_to. Two lists of names
// overlap only when they share a name, and the request is restricted to
// family or metric being a shared name. This is conservative: a family
// policy [A] and a metric policy [B] do both govern a request with family A
// and metric B, but without the registry lint cannot tell a family from a
// metric, and reporting every pair of named policies as overlapping would
// drown the real conflicts.
//
// A policy that binds a tool call's fields (/tool, /arguments/…,
// /grounding/…) governs calls only; it overlaps another only when both
// can govern a call: one names the kind tool, or both name one tool.
// (Family and metric mean nothing to a call: the scope is then
// unrestricted.)
func overlap(a, b *Compiled) (func(fam, met string) string, bool) {
	if a.calls || b.calls {
		if !governsCalls(a) || !governsCalls(b) {
			return nil, false
		}
		tool := string(registry.KindTool)
		if slices.Contains(a.Policy.AppliesTo, tool) || slices.Contains(b.Policy.AppliesTo, tool) ||
			slices.ContainsFunc(a.Policy.AppliesTo, func(n string) bool { return slices.Contains(b.Policy.AppliesTo, n) }) {
			return func(string, string) string { return "true" }, true
		}
		return nil, false
	}
	ka, kb := governsAll(a), governsAll(b)
	switch {
	case ka && kb:
		return func(string, string) string { return "true" }, true
	case ka:
		return func(f, m string) string { return appliesTerm(b, f, m) }, true
	case kb:
		return func(f, m string) string { return appliesTerm(a, f, m) }, true
	}
	var shared []string
	for _, n := range a.Policy.AppliesTo {
		if slices.Contains(b.Policy.AppliesTo, n) {
			shared = append(shared, n)
		}
	}
	if len(shared) == 0 {
		return nil, false
	}
	return func(f, m string) string { return namesTerm(shared, f, m) }, true
}

// governsCalls reports whether c can govern some tool call: it binds no
// request field and names the kind tool or a name spelt like a tool's.
func governsCalls(c *Compiled) bool {
	return !c.requests && slices.ContainsFunc(c.Policy.AppliesTo, func(n string) bool {
		return n == string(registry.KindTool) || IsToolName(n)
	})
}

func governsAll(c *Compiled) bool {
	return slices.Contains(c.Policy.AppliesTo, string(registry.KindFamily)) || slices.Contains(c.Policy.AppliesTo, string(registry.KindMetric))
}

// interact reports whether two policies read a common request value: a
// pointer both bind, or the family or metric, which overlap restricts.
// Policies that do not interact conflict only when one of them is vacuous
// (their admissions are independent), which lint reports as such: no
// query is needed.
func interact(a, b *Compiled) bool {
	if len(sharedPointers(a, b)) > 0 {
		return true
	}
	for _, c := range []*Compiled{a, b} {
		for _, bd := range c.bound {
			if bd.Ptr.Field == "family" || bd.Ptr.Field == "metric" {
				return true
			}
		}
	}
	return false
}

// appliesTerm is Compiled.AppliesTo over the symbolic family and metric.
func appliesTerm(c *Compiled, fam, met string) string {
	if governsAll(c) {
		return "true"
	}
	return namesTerm(c.Policy.AppliesTo, fam, met)
}

func namesTerm(names []string, fam, met string) string {
	var b strings.Builder
	b.WriteString("(or")
	for _, n := range names {
		lit, err := stringLiteral(n)
		if err != nil {
			continue // registry names are ASCII; a name that cannot be written matches nothing
		}
		fmt.Fprintf(&b, " (= %s %s) (= %s %s)", fam, lit, met, lit)
	}
	b.WriteString(" false)")
	return b.String()
}

func describeScope(a, b *Compiled) string {
	if a.calls || b.calls {
		return "calling a tool"
	}
	ka, kb := governsAll(a), governsAll(b)
	var names []string
	switch {
	case ka && kb:
		return "at all"
	case ka:
		names = b.Policy.AppliesTo
	case kb:
		names = a.Policy.AppliesTo
	default:
		for _, n := range a.Policy.AppliesTo {
			if slices.Contains(b.Policy.AppliesTo, n) {
				names = append(names, n)
			}
		}
	}
	return "for " + strings.Join(names, " or ")
}

func sharedPointers(a, b *Compiled) []string {
	in := map[string]bool{}
	for _, bd := range a.bound {
		in[bd.Ptr.Text] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, bd := range b.bound {
		if in[bd.Ptr.Text] && !seen[bd.Ptr.Text] {
			seen[bd.Ptr.Text] = true
			out = append(out, bd.Ptr.Text)
		}
	}
	sort.Strings(out)
	return out
}

// typeClash finds a pointer one policy binds as a String and the other as
// a number: no request value fits both, so they cannot both admit a
// request that both govern (Check refuses a value that does not fit a
// binding's sort).
func typeClash(a, b *Compiled) (ptr, sortA, sortB string, clash bool) {
	for _, x := range a.bound {
		for _, y := range b.bound {
			if x.Ptr.Text == y.Ptr.Text && (x.Sort == "String") != (y.Sort == "String") {
				return x.Ptr.Text, x.Sort, y.Sort, true
			}
		}
	}
	return "", "", "", false
}

// query is a solver query over a symbolic request: one solver constant
// (a carrier) per pointer the policies in view bind, shared by all of
// them, so constants bound to one pointer hold one value. Int and Real
// bindings of one pointer share a Real carrier (an Int binding fits an
// integral value); String and number bindings share a tagged pair (a
// binding fits the value of its kind). Policies are placed under their own
// prefixes and read the carriers through top-level equalities; whether a
// value fits a binding is a term (fits), since Check refuses a value that
// does not fit.
type query struct {
	b              strings.Builder
	carriers       map[string]*carrier // by pointer text
	order          []*carrier          // by pointer text
	family, metric string              // carrier symbols, always declared: applies_to reads them
}

type carrier struct {
	ptr  Pointer
	sort string // String, Int, Real, Bool; "" when the value may be a number or a string
	num  string // the numeric sort when sort is ""
	sym  string // the value (the number when sort is "")
	str  string // sort "": the string value
	tag  string // sort "": whether the value is the string
}

// numSort is the sort of a numeric carrier's value.
func (cr *carrier) numSort() string {
	if cr.sort == "" {
		return cr.num
	}
	return cr.sort
}

// maxInt bounds Int request values: a float64 holds every integer up to
// 2^53 exactly, and literal refuses larger ones.
const maxInt = "9007199254740992"

// MaxGridPoints bounds /grid/points in lint and diff: the gate refuses a
// wider grid before any policy sees it (ground.MaxGridPoints, which imports
// this package; a test there holds the two equal).
const MaxGridPoints = 4096

func newQuery(cs []*Compiled) *query {
	sorts := map[string]map[string]bool{}
	ptrs := map[string]Pointer{}
	for _, p := range []string{"/family", "/metric"} {
		ptr, _ := ParsePointer(p)
		ptrs[p] = ptr
		sorts[p] = map[string]bool{"String": true}
	}
	for _, c := range cs {
		for _, bd := range c.bound {
			if sorts[bd.Ptr.Text] == nil {
				sorts[bd.Ptr.Text] = map[string]bool{}
			}
			sorts[bd.Ptr.Text][bd.Sort] = true
			ptrs[bd.Ptr.Text] = bd.Ptr
		}
	}
	q := &query{carriers: map[string]*carrier{}}
	for _, text := range slices.Sorted(maps.Keys(sorts)) {
		s := sorts[text]
		cr := &carrier{ptr: ptrs[text], sym: smt.SymbolText(reserved + "r" + text)}
		num := "Int"
		if s["Real"] {
			num = "Real"
		}
		isNum := s["Int"] || s["Real"]
		switch {
		case s["Bool"]:
			cr.sort = "Bool"
		case s["String"] && isNum:
			cr.num = num
			cr.str = smt.SymbolText(reserved + "r" + text + ".str")
			cr.tag = smt.SymbolText(reserved + "r" + text + ".is_str")
		case s["String"]:
			cr.sort = "String"
		default:
			cr.sort = num
		}
		q.carriers[text] = cr
		q.order = append(q.order, cr)
		q.declare(cr)
	}
	q.family, q.metric = q.carriers["/family"].sym, q.carriers["/metric"].sym
	return q
}

// declare writes a carrier's constants and the bounds every request meets.
func (q *query) declare(cr *carrier) {
	if cr.sort == "" {
		fmt.Fprintf(&q.b, "(declare-const %s %s)\n(declare-const %s String)\n(declare-const %s Bool)\n", cr.sym, cr.num, cr.str, cr.tag)
	} else {
		fmt.Fprintf(&q.b, "(declare-const %s %s)\n", cr.sym, cr.sort)
	}
	switch {
	case cr.ptr.Field == "grid/points":
		fmt.Fprintf(&q.b, "(assert (<= 1 %s %d))\n", cr.sym, MaxGridPoints)
	case cr.ptr.Field == "facts" && DataFacts[cr.ptr.Param] == "Int":
		fmt.Fprintf(&q.b, "(assert (<= 0 %s %s))\n", cr.sym, maxInt)
	case cr.ptr.Field == "grounding" && cr.ptr.Param == "confidence":
		fmt.Fprintf(&q.b, "(assert (<= 0.0 %s 1.0))\n", cr.sym)
	case cr.ptr.Field == "grounding":
		q.b.WriteString("(assert (or")
		for _, m := range GroundingModes {
			lit, _ := stringLiteral(m)
			fmt.Fprintf(&q.b, " (= %s %s)", cr.sym, lit)
		}
		q.b.WriteString("))\n")
	case cr.numSort() == "Int":
		fmt.Fprintf(&q.b, "(assert (<= (- %s) %s %s))\n", maxInt, cr.sym, maxInt)
	}
}

// placed is one policy in a query.
type placed struct {
	ren     func(string) string
	applies string // the policy governs the symbolic request
	fits    string // every value fits the sort of the constant bound to it
}

// place writes c's declarations and definitions under prefix pre and ties
// its bound constants to the carriers.
func (q *query) place(c *Compiled, pre string) placed {
	ren := func(s string) string { return pre + s }
	for _, cmd := range c.commands {
		q.b.WriteString(cmd.Rename(c.symbols, ren).String())
		q.b.WriteByte('\n')
	}
	var fits []string
	for _, bd := range c.bound {
		cr := q.carriers[bd.Ptr.Text]
		val := cr.sym
		switch {
		case bd.Sort == "String" && cr.sort == "":
			val = cr.str
			fits = append(fits, cr.tag)
		case bd.Sort == "Int" && cr.numSort() == "Real":
			val = "(to_int " + cr.sym + ")"
			fits = append(fits, fmt.Sprintf("(is_int %s) (<= (- %s) %s %s)", cr.sym, maxInt, cr.sym, maxInt))
		}
		if cr.sort == "" && bd.Sort != "String" {
			fits = append(fits, "(not "+cr.tag+")")
		}
		fmt.Fprintf(&q.b, "(assert (= %s %s))\n", smt.SymbolText(ren(bd.Const)), val)
	}
	p := placed{ren: ren, applies: appliesTerm(c, q.family, q.metric), fits: "true"}
	if len(fits) > 0 {
		p.fits = "(and " + strings.Join(fits, " ") + ")"
	}
	return p
}

// maxExpand bounds the Bool binders one quantifier may have expanded (2^n
// copies of its body).
const maxExpand = 3

// expandBool rewrites the quantifiers over Bool variables in term into
// their finite expansions — (forall ((a Bool)) t) is (and t[a:=true]
// t[a:=false]) — keeping binders of other sorts. The meaning is the same;
// z3 4.8 decides such queries over strings in a fraction of the time it
// takes with the quantifier (seconds → tens of ms on the shipped set). A
// quantifier whose body rebinds one of its Bool variables, or with more
// than maxExpand of them, is left as it is.
func expandBool(term string) string {
	xs, err := smt.Parse(term)
	if err != nil || len(xs) != 1 {
		return term
	}
	out := expand(xs[0]).String()
	if len(out) > maxExpanded && len(out) > len(term) {
		return term // a large policy: keep the query within smt.MaxQueryBytes
	}
	return out
}

// maxExpanded bounds an expanded term's text.
const maxExpanded = 256 << 10

func expand(t smt.Sexp) smt.Sexp {
	if !t.IsList {
		return t
	}
	out := t
	out.List = make([]smt.Sexp, len(t.List))
	for i, c := range t.List {
		out.List[i] = expand(c)
	}
	q := out.Head()
	if (q != "forall" && q != "exists") || len(out.List) != 3 || !out.List[1].IsList {
		return out
	}
	var bools []string
	var keep []smt.Sexp
	for _, b := range out.List[1].List {
		if b.IsList && len(b.List) == 2 && !b.List[1].IsList && b.List[1].Atom == "Bool" {
			if s, ok := b.List[0].Symbol(); ok {
				bools = append(bools, s)
				continue
			}
		}
		keep = append(keep, b)
	}
	body := out.List[2]
	if len(bools) == 0 || len(bools) > maxExpand || rebinds(body, bools) {
		return out
	}
	join := "and"
	if q == "exists" {
		join = "or"
	}
	names := map[string]bool{}
	for _, b := range bools {
		names[b] = true
	}
	res := smt.Sexp{IsList: true, List: []smt.Sexp{{Atom: join}}}
	for mask := 0; mask < 1<<len(bools); mask++ {
		val := map[string]string{}
		for i, b := range bools {
			val[b] = strconv.FormatBool(mask&(1<<i) != 0)
		}
		inst := body.Rename(names, func(s string) string { return val[s] })
		if len(keep) > 0 {
			inst = smt.Sexp{IsList: true, List: []smt.Sexp{{Atom: q}, {IsList: true, List: keep}, inst}}
		}
		res.List = append(res.List, inst)
	}
	return res
}

// rebinds reports whether t binds one of names again (forall, exists, let,
// match, or a name used as a function of its own), where substituting a
// value for the outer name would be wrong.
func rebinds(t smt.Sexp, names []string) bool {
	if !t.IsList {
		return false
	}
	switch t.Head() {
	case "forall", "exists", "let", "match", "lambda":
		if len(t.List) > 1 && mentions(t.List[1], names) {
			return true
		}
	}
	for _, c := range t.List {
		if rebinds(c, names) {
			return true
		}
	}
	return false
}

func mentions(t smt.Sexp, names []string) bool {
	if !t.IsList {
		s, ok := t.Symbol()
		return ok && slices.Contains(names, s)
	}
	for _, c := range t.List {
		if mentions(c, names) {
			return true
		}
	}
	return false
}
