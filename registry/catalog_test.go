package registry

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// This file checks the quality of the built-in catalog (registry/catalog/):
// its size and kinds, honest semantic layers, well-formed expressions over
// the engine's kernels, and the discovery behaviour DOMAIN.md requires. The
// discovery checks run against a small model of the four-tier cascade
// (exact name, alias, tag, keyword) written here from SPEC.md §4, so the
// catalog can be checked before and independently of discover/.

var (
	catFamilies = []string{"MOM_WZS", "MOM_REV", "CARRY", "VOL_TGT"}
	catMetrics  = []string{"SRP", "MDD", "ARET", "AVOL", "SRT", "CLM", "HIT", "TRN", "TRET"}

	// catDomainOps are the operations of DOMAIN.md's table, by name.
	catDomainOps = []string{"dlog", "ret", "shift", "diff", "locf", "cs0", "cs1", "ecs1", "wkd",
		"rmean", "rstd", "wzs", "vnorm", "spread", "clip", "sign", "neg", "abs", "log", "exp", "sqrt", "inv",
		"add", "sub", "mul", "div", "gt", "lt", "ge", "le", "eq", "ne"}

	// catKernelArity lists every kernel an impl.expr may call and how many
	// arguments it takes.
	catKernelArity = map[string]int{
		"dlog": 1, "ret": 1, "locf": 1, "cs0": 1, "cs1": 1, "ecs1": 1, "wkd": 1,
		"sign": 1, "neg": 1, "abs": 1, "log": 1, "exp": 1, "sqrt": 1, "inv": 1,
		"shift": 2, "diff": 2, "rmean": 2, "rstd": 2, "wzs": 2, "vnorm": 2,
		"add": 2, "sub": 2, "mul": 2, "div": 2, "gt": 2, "lt": 2, "ge": 2, "le": 2, "eq": 2, "ne": 2,
		"clip": 3, "spread": 3,
		"col": 2, "const": 1, "volsize": 6, "mean": 1, "sum": 1,
		"srp": 1, "mdd": 1, "aret": 1, "avol": 1, "srt": 1, "clm": 1, "hit": 1, "trn": 1, "tret": 1,
	}

	// catLookBack are the kernels whose output on row t depends on earlier
	// rows: an entry is stateful exactly when its expression uses one.
	catLookBack = []string{"dlog", "ret", "shift", "diff", "locf", "cs0", "cs1", "ecs1",
		"rmean", "rstd", "wzs", "vnorm", "volsize", "mdd", "clm", "trn"}

	catMetricKernels = []string{"srp", "mdd", "aret", "avol", "srt", "clm", "hit", "trn", "tret"}
)

func catLoad(t *testing.T) ([]Entry, map[string]Entry) {
	t.Helper()
	es, err := BuiltinCatalog()
	if err != nil {
		t.Fatalf("BuiltinCatalog: %v", err)
	}
	by := make(map[string]Entry, len(es))
	for _, e := range es {
		by[e.Name] = e
	}
	return es, by
}

func TestCatalogSizeAndKinds(t *testing.T) {
	es, by := catLoad(t)
	if n := len(es); n < 225 || n > 255 {
		t.Errorf("catalog has %d entries, want 225..255", n)
	}
	count := map[Kind]int{}
	var fams, mets []string
	for _, e := range es {
		count[e.Kind]++
		switch e.Kind {
		case KindFamily:
			fams = append(fams, e.Name)
		case KindMetric:
			mets = append(mets, e.Name)
		}
	}
	t.Logf("entries per kind: %v (total %d)", count, len(es))
	sort.Strings(fams)
	sort.Strings(mets)
	if want := slices.Sorted(slices.Values(catFamilies)); !slices.Equal(fams, want) {
		t.Errorf("families = %v, want exactly %v", fams, want)
	}
	if want := slices.Sorted(slices.Values(catMetrics)); !slices.Equal(mets, want) {
		t.Errorf("metrics = %v, want exactly %v", mets, want)
	}
	for _, op := range catDomainOps {
		if e, ok := by[op]; !ok || e.Kind != KindOperation {
			t.Errorf("DOMAIN operation %q missing or not an operation", op)
		}
	}
	for _, k := range []Kind{KindSignal, KindRecipe} {
		if count[k] < 10 {
			t.Errorf("only %d %s entries", count[k], k)
		}
	}
}

func TestCatalogIdentitiesDistinct(t *testing.T) {
	es, _ := catLoad(t)
	seen := map[string]string{}
	for _, e := range es {
		id, err := e.Identity()
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		if prev, ok := seen[id.String()]; ok {
			t.Errorf("%s and %s share identity %s", prev, e.Name, id)
		}
		seen[id.String()] = e.Name
	}
}

// TestCatalogSemantics checks the rules every entry's layers follow.
func TestCatalogSemantics(t *testing.T) {
	es, _ := catLoad(t)
	for _, e := range es {
		s := e.Sem
		if !s.Pure || !s.Deterministic {
			t.Errorf("%s: every built-in capability is pure and deterministic", e.Name)
		}
		if e.Impl.Engine != "groundgate/v1" {
			t.Errorf("%s: engine %q", e.Name, e.Impl.Engine)
		}
		fusable := e.Impl.IR == IRElementwise || e.Impl.IR == IRBinary
		if e.Impl.Fusable != fusable {
			t.Errorf("%s: fusable=%v for ir %q (fusable exactly for elementwise and binary)", e.Name, e.Impl.Fusable, e.Impl.IR)
		}
		if (s.Commutative || s.Associative) && e.Alg.Arity != 2 {
			t.Errorf("%s: commutative/associative needs two inputs, has %d", e.Name, e.Alg.Arity)
		}
		switch e.Kind {
		case KindFamily:
			if e.Impl.IR != IRStrategy || !slices.Equal(e.Alg.Outputs, []string{"pnl", "weights"}) {
				t.Errorf("%s: a family is a strategy producing pnl and weights", e.Name)
			}
		case KindMetric:
			if e.Impl.IR != IRReduce || !slices.Equal(e.Alg.Outputs, []string{"score"}) || len(e.Alg.Params) != 0 {
				t.Errorf("%s: a metric is a parameter-free reduction to a score", e.Name)
			}
		default:
			if s.Orientation != OrientNone {
				t.Errorf("%s: orientation %q, want none outside families and metrics", e.Name, s.Orientation)
			}
		}
		if e.Kind == KindRecipe && !slices.Equal(e.Alg.Outputs, []string{"score"}) {
			t.Errorf("%s: a recipe ends in a score", e.Name)
		}
		root, err := catParse(e.Impl.Expr)
		if err != nil {
			continue // reported by TestCatalogExpressions
		}
		ks := root.kernels()
		lookBack := slices.ContainsFunc(catLookBack, func(k string) bool { return ks[k] })
		if s.Stateful != lookBack {
			t.Errorf("%s: stateful=%v but its expression %s look back in time", e.Name, s.Stateful,
				map[bool]string{true: "does", false: "does not"}[lookBack])
		}
	}
}

// TestCatalogOperationLaws pins the semantic flags of the DOMAIN operations
// and of variants whose algebra is easy to get wrong.
func TestCatalogOperationLaws(t *testing.T) {
	_, by := catLoad(t)
	type law struct{ comm, assoc, idem, rev, stateful bool }
	laws := map[string]law{
		"dlog": {stateful: true}, "ret": {stateful: true}, "shift": {stateful: true}, "diff": {stateful: true},
		"locf": {idem: true, stateful: true}, "cs0": {rev: true, stateful: true}, "cs1": {rev: true, stateful: true},
		"ecs1": {rev: true, stateful: true}, "wkd": {idem: true},
		"rmean": {stateful: true}, "rstd": {stateful: true}, "wzs": {stateful: true}, "vnorm": {stateful: true},
		"spread": {}, "clip": {idem: true}, "sign": {idem: true}, "neg": {rev: true}, "abs": {idem: true},
		"log": {rev: true}, "exp": {rev: true}, "sqrt": {rev: true}, "inv": {rev: true},
		"add": {comm: true, assoc: true}, "sub": {}, "mul": {comm: true, assoc: true}, "div": {},
		"gt": {}, "lt": {}, "ge": {}, "le": {}, "eq": {comm: true}, "ne": {comm: true},
		// gt(gt(x,0),0) = gt(x,0) and ne likewise, but lt, ge, le, eq
		// against 0 change a 0/1 input.
		"gt_0": {idem: true}, "ne_0": {idem: true}, "lt_0": {}, "ge_0": {}, "le_0": {}, "eq_0": {},
		"pospart": {idem: true}, "negpart": {idem: true}, "clip_unit": {idem: true},
		"add_scalar": {rev: true}, "mul_scalar": {}, // c may be 0
		"log1p": {rev: true}, "expm1": {rev: true}, "softsign": {rev: true},
		"wkd_locf":  {idem: true, stateful: true},
		"xs_demean": {idem: true}, "xs_mean": {}, "const": {idem: true}, "shift_1": {stateful: true},
		"rsharpe": {stateful: true}, "ssqrt": {rev: true}, "sq": {},
	}
	for name, want := range laws {
		e, ok := by[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		s := e.Sem
		got := law{s.Commutative, s.Associative, s.Idempotent, e.Alg.Reversible, s.Stateful}
		if got != want {
			t.Errorf("%s: comm/assoc/idem/rev/stateful = %+v, want %+v", name, got, want)
		}
	}
}

func TestCatalogFamiliesAndMetrics(t *testing.T) {
	_, by := catLoad(t)
	orient := map[string]Orientation{
		"MOM_WZS": OrientPositive, "MOM_REV": OrientNegative, "CARRY": OrientPositive, "VOL_TGT": OrientPositive,
		"SRP": OrientMaximize, "MDD": OrientMinimize, "ARET": OrientMaximize, "AVOL": OrientMinimize,
		"SRT": OrientMaximize, "CLM": OrientMaximize, "HIT": OrientMaximize, "TRN": OrientMinimize, "TRET": OrientMaximize,
	}
	for name, want := range orient {
		if got := by[name].Sem.Orientation; got != want {
			t.Errorf("%s: orientation %q, want %q", name, got, want)
		}
	}

	// Common family parameters and their DOMAIN.md defaults.
	common := map[string]any{"risk_window": 60.0, "leverage": 1.0, "target_vol": 0.1, "lag": 1.0}
	for _, f := range catFamilies {
		ps := map[string]Param{}
		for _, p := range by[f].Alg.Params {
			ps[p.Name] = p
		}
		for n, d := range common {
			if p, ok := ps[n]; !ok || p.Default != d {
				t.Errorf("%s: param %s = %+v, want default %v", f, n, p, d)
			}
		}
		w, hasWindow := ps["window"]
		if f == "VOL_TGT" {
			if hasWindow {
				t.Errorf("VOL_TGT's signal is a constant: it must not declare a window it ignores")
			}
		} else if !hasWindow || w.Type != ParamInt || w.Min == nil || *w.Min != 2 || w.Default != nil {
			t.Errorf("%s: window = %+v, want a required int >= 2", f, w)
		}
	}
	cp := map[string]Param{}
	for _, p := range by["CARRY"].Alg.Params {
		cp[p.Name] = p
	}
	if cp["front"].Type != ParamColumn || cp["front"].Default != "C1" || cp["next"].Type != ParamColumn || cp["next"].Default != "C2" {
		t.Errorf("CARRY front/next = %+v / %+v, want columns defaulting to C1 / C2", cp["front"], cp["next"])
	}

	// MOM_REV is MOM_WZS with the signal negated: same schema, same
	// sizing, opposite orientation.
	mw, mr := by["MOM_WZS"], by["MOM_REV"]
	a, err1 := catParse(mw.Impl.Expr)
	b, err2 := catParse(mr.Impl.Expr)
	if err1 != nil || err2 != nil {
		t.Fatalf("parse: %v %v", err1, err2)
	}
	want := &catNode{list: slices.Clone(a.list)}
	want.list[1] = &catNode{list: []*catNode{{atom: "neg"}, a.list[1]}}
	if b.String() != want.String() {
		t.Errorf("MOM_REV expr = %s, want %s", b, want)
	}
	if !reflect.DeepEqual(mw.Alg.Params, mr.Alg.Params) {
		t.Errorf("MOM_WZS and MOM_REV must take the same parameters")
	}
	if !strings.Contains(by["VOL_TGT"].Impl.Expr, "(const 1)") ||
		!strings.Contains(by["CARRY"].Impl.Expr, "(sub (log (col x $front)) (log (col x $next)))") ||
		!strings.Contains(by["CARRY"].Impl.Expr, "(dlog (col x $front))") {
		t.Errorf("VOL_TGT or CARRY does not follow DOMAIN.md")
	}
}

// TestCatalogExpressions parses every impl.expr and checks its kernels,
// arities, parameters and inputs.
func TestCatalogExpressions(t *testing.T) {
	es, _ := catLoad(t)
	for _, e := range es {
		root, err := catParse(e.Impl.Expr)
		if err != nil {
			t.Errorf("%s: %q: %v", e.Name, e.Impl.Expr, err)
			continue
		}
		declared := map[string]bool{}
		for _, p := range e.Alg.Params {
			declared[p.Name] = true
		}
		inputs := map[string]bool{}
		for i, typ := range e.Alg.Inputs {
			inputs[catInputSymbol(i, typ)] = true
		}
		usedParams, usedInputs := map[string]bool{}, map[string]bool{}
		var walk func(n *catNode)
		walk = func(n *catNode) {
			if n.list == nil {
				switch {
				case strings.HasPrefix(n.atom, "$"):
					usedParams[n.atom[1:]] = true
					if !declared[n.atom[1:]] {
						t.Errorf("%s: %s is not a declared parameter", e.Name, n.atom)
					}
				case inputs[n.atom]:
					usedInputs[n.atom] = true
				default:
					if _, err := strconv.ParseFloat(n.atom, 64); err != nil {
						t.Errorf("%s: %q is neither an input, a $param nor a number", e.Name, n.atom)
					}
				}
				return
			}
			head := n.list[0]
			if head.list != nil {
				t.Errorf("%s: a list must start with a kernel name: %s", e.Name, n)
				return
			}
			arity, ok := catKernelArity[head.atom]
			if !ok {
				t.Errorf("%s: unknown kernel %q", e.Name, head.atom)
			} else if len(n.list)-1 != arity {
				t.Errorf("%s: %s takes %d arguments: %s", e.Name, head.atom, arity, n)
			}
			for _, c := range n.list[1:] {
				walk(c)
			}
		}
		walk(root)
		for p := range declared {
			if !usedParams[p] {
				t.Errorf("%s: parameter %s is declared but not used in %s", e.Name, p, e.Impl.Expr)
			}
		}
		if !root.kernels()["const"] {
			for in := range inputs {
				if !usedInputs[in] {
					t.Errorf("%s: input %s is declared but not used", e.Name, in)
				}
			}
		}
	}
}

// catInputSymbol names an entry's i-th input inside its expression: p for
// P&L, w for weights, otherwise x then y.
func catInputSymbol(i int, typ string) string {
	switch typ {
	case "pnl":
		return "p"
	case "weights":
		return "w"
	}
	return []string{"x", "y"}[min(i, 1)]
}

// TestCatalogRecipes checks that every recipe is a metric kernel applied to
// one family's expression with its numeric parameters fixed in range.
func TestCatalogRecipes(t *testing.T) {
	es, by := catLoad(t)
	for _, e := range es {
		if e.Kind != KindRecipe {
			continue
		}
		root, err := catParse(e.Impl.Expr)
		if err != nil || root.list == nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		metric := root.list[0].atom
		if !slices.Contains(catMetricKernels, metric) || len(root.list) != 2 {
			t.Errorf("%s: want (METRIC FAMILY-EXPR), got %s", e.Name, root)
			continue
		}
		if !strings.HasSuffix(e.Name, "_"+strings.ToUpper(metric)) {
			t.Errorf("%s: name does not end in its metric %s", e.Name, strings.ToUpper(metric))
		}
		var fam Entry
		for _, f := range catFamilies {
			if strings.HasPrefix(e.Name, f+"_") {
				fam = by[f]
			}
		}
		if fam.Name == "" {
			t.Errorf("%s: name does not start with a family", e.Name)
			continue
		}
		pattern, _ := catParse(fam.Impl.Expr)
		own := map[string]bool{}
		for _, p := range e.Alg.Params {
			own[p.Name] = true
		}
		bound := map[string]string{}
		if err := catMatch(pattern, root.list[1], own, bound); err != nil {
			t.Errorf("%s: not %s with fixed parameters: %v", e.Name, fam.Name, err)
			continue
		}
		for _, p := range fam.Alg.Params {
			v, ok := bound[p.Name]
			if !ok {
				continue
			}
			f, _ := strconv.ParseFloat(v, 64)
			if (p.Min != nil && f < *p.Min) || (p.Max != nil && f > *p.Max) || (p.Type == ParamInt && f != math.Trunc(f)) {
				t.Errorf("%s: %s = %v is out of %s's range", e.Name, p.Name, v, fam.Name)
			}
		}
	}
}

// catMatch matches a family expression against a recipe's: each $param of
// the family must be a number (the same one at every use), or the same
// $param when the recipe keeps it as its own parameter.
func catMatch(pat, got *catNode, own map[string]bool, bound map[string]string) error {
	if pat.list == nil {
		if name, ok := strings.CutPrefix(pat.atom, "$"); ok {
			if own[name] {
				if got.atom != pat.atom {
					return fmt.Errorf("%s must stay a parameter, got %s", pat.atom, got)
				}
				return nil
			}
			if got.list != nil {
				return fmt.Errorf("%s bound to an expression %s", pat.atom, got)
			}
			if _, err := strconv.ParseFloat(got.atom, 64); err != nil {
				return fmt.Errorf("%s bound to %s, not a number", pat.atom, got.atom)
			}
			if prev, ok := bound[name]; ok && prev != got.atom {
				return fmt.Errorf("%s bound to both %s and %s", pat.atom, prev, got.atom)
			}
			bound[name] = got.atom
			return nil
		}
		if got.list != nil || got.atom != pat.atom {
			return fmt.Errorf("want %s, got %s", pat, got)
		}
		return nil
	}
	if got.list == nil || len(got.list) != len(pat.list) {
		return fmt.Errorf("want %s, got %s", pat, got)
	}
	for i := range pat.list {
		if err := catMatch(pat.list[i], got.list[i], own, bound); err != nil {
			return err
		}
	}
	return nil
}

// TestCatalogDiscoveryLayer checks descriptions, examples and the alias
// vocabulary. Aliases are compared folded with catNorm, which is stricter
// than lower-casing with '-' as ' ' (it also folds punctuation, possessives
// and plurals), so "Sharpe ratios" and "sharpe-ratio" count as one alias.
func TestCatalogDiscoveryLayer(t *testing.T) {
	es, by := catLoad(t)
	names := map[string]string{} // folded name -> name
	for _, e := range es {
		names[catNorm(e.Name)] = e.Name
		names[catNorm(strings.ReplaceAll(e.Name, "_", " "))] = e.Name
	}
	aliases := map[string]string{} // folded alias -> owner
	for _, e := range es {
		d := e.Disc
		if len(strings.Fields(d.Description)) < 8 {
			t.Errorf("%s: description %q is too thin", e.Name, d.Description)
		}
		if n := len(d.Examples); n < 1 || n > 2 {
			t.Errorf("%s: %d examples, want 1 or 2", e.Name, n)
		}
		if e.Kind != KindRecipe && len(d.Aliases) == 0 {
			t.Errorf("%s: no aliases", e.Name)
		}
		for _, a := range d.Aliases {
			f := catNorm(a)
			if prev, ok := aliases[f]; ok {
				t.Errorf("alias %q of %s folds to %q, already an alias of %s", a, e.Name, f, prev)
			}
			aliases[f] = e.Name
			if owner, ok := names[f]; ok && owner != e.Name {
				t.Errorf("alias %q of %s is the name of %s", a, e.Name, owner)
			}
		}
		for _, tag := range d.Tags {
			if catNorm(tag) == "momentum" && e.Name != "MOM_WZS" {
				t.Errorf("%s: only MOM_WZS may carry the tag momentum", e.Name)
			}
		}
	}
	// A family's tags are its own: a tag shared between families would
	// discover several families for one word.
	tagOwner := map[string]string{}
	for _, f := range catFamilies {
		for _, tag := range by[f].Disc.Tags {
			if prev, ok := tagOwner[catNorm(tag)]; ok {
				t.Errorf("tag %q is shared by families %s and %s", tag, prev, f)
			}
			tagOwner[catNorm(tag)] = f
		}
	}
}

// TestCatalogDiscoveryTable is DOMAIN.md's "Discovery behaviour the
// catalog must show", under the cascade model below.
func TestCatalogDiscoveryTable(t *testing.T) {
	es, _ := catLoad(t)
	tests := []struct {
		terms []string
		mode  string
		want  []string // exactly these names, unless include is set
		// include: want must be among the matches, and no family or metric
		// may be.
		include bool
	}{
		{[]string{"momentum", "Momentum", "MOMENTUM"}, "alias", []string{"MOM_WZS"}, false},
		{[]string{"mean reversion", "mean-reversion", "Mean Reversion"}, "alias", []string{"MOM_REV"}, false},
		{[]string{"contrarian", "reversal", "fade", "short-term reversal", "buy the dip"}, "alias", []string{"MOM_REV"}, false},
		{[]string{"carry", "Carry", "CARRY"}, "exact", []string{"CARRY"}, false},
		{[]string{"roll yield", "backwardation"}, "alias", []string{"CARRY"}, false},
		{[]string{"vol targeting", "volatility targeting", "vol-targeting"}, "alias", []string{"VOL_TGT"}, false},
		{[]string{"sharpe", "sharpe ratio", "Sharpe's", "sharpe-ratio", "Sharpe ratios"}, "alias", []string{"SRP"}, false},
		{[]string{"max drawdown", "drawdown", "maximum drawdown", "drawdowns"}, "alias", []string{"MDD"}, false},
		{[]string{"sortino"}, "alias", []string{"SRT"}, false},
		{[]string{"calmar"}, "alias", []string{"CLM"}, false},
		{[]string{"hit rate", "win rate"}, "alias", []string{"HIT"}, false},
		{[]string{"turnover"}, "alias", []string{"TRN"}, false},
		{[]string{"total return", "cumulative return"}, "alias", []string{"TRET"}, false},
		{[]string{"annualized volatility", "annualised volatility"}, "alias", []string{"AVOL"}, false},
		{[]string{"annualized return", "annualised return"}, "alias", []string{"ARET"}, false},
		{[]string{"z-score", "z score", "Z-scores"}, "tag", []string{"REL_MOM_Z"}, true},
		{[]string{"log returns", "log return", "Log-returns"}, "keyword", []string{"dlog"}, true},
	}
	for _, tc := range tests {
		for _, term := range tc.terms {
			mode, got := catDiscover(es, term)
			if mode != tc.mode {
				t.Errorf("%q: mode %q (%v), want %q", term, mode, catNames(got), tc.mode)
				continue
			}
			if !tc.include {
				if names := catNames(got); !slices.Equal(names, tc.want) {
					t.Errorf("%q: discovers %v, want exactly %v", term, names, tc.want)
				}
				continue
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(got, func(e Entry) bool { return e.Name == w }) {
					t.Errorf("%q: %s not among %v", term, w, catNames(got))
				}
			}
			for _, e := range got {
				if e.Kind == KindFamily || e.Kind == KindMetric {
					t.Errorf("%q: discovers the %s %s", term, e.Kind, e.Name)
				}
			}
		}
	}
}

// TestCatalogNoTrendFamily: the registry has no trend-following family, so
// "trend" must not reach a family (or a recipe, which wraps one) at any
// tier, not even by keyword.
func TestCatalogNoTrendFamily(t *testing.T) {
	es, _ := catLoad(t)
	for _, term := range []string{"trend", "trends", "Trend", "trend following", "trend-following",
		"trend-following strategy", "trend follower", "trending"} {
		for _, tier := range catTiers {
			for _, e := range catTier(es, term, tier) {
				if e.Kind == KindFamily || e.Kind == KindRecipe {
					t.Errorf("%q reaches the %s %s by %s", term, e.Kind, e.Name, tier)
				}
			}
		}
	}
}

// TestCatalogGenericTerms: words that appear in almost any research prompt
// must not discover a family or a metric; otherwise the gate would admit
// one the researcher never asked for.
func TestCatalogGenericTerms(t *testing.T) {
	es, _ := catLoad(t)
	for _, term := range []string{
		"strategy", "strategies", "signal", "signal window", "return", "returns", "log returns", "daily returns",
		"volatility", "vol", "annualised", "annualized", "std", "standard deviation", "z-score", "score", "scored",
		"price", "prices", "value", "time series", "column", "window", "lookback", "look-back", "rolling", "sample",
		"out of sample", "day", "daily", "risk", "leverage", "lag", "position", "positions", "position sizing",
		"sizing", "weight", "weights", "target", "volatility target", "target volatility", "portfolio", "asset",
		"futures", "market", "trade", "trading", "backtest", "sweep", "parameter", "default", "compare", "best",
		"performance", "metric", "family", "families", "mean", "average", "sum", "rate", "relative", "level",
		"equity", "equity curve", "curve", "long", "short", "history", "data", "oil", "crude oil",
	} {
		mode, got := catDiscover(es, term)
		for _, e := range got {
			if e.Kind == KindFamily || e.Kind == KindMetric {
				t.Errorf("generic term %q discovers the %s %s by %s", term, e.Kind, e.Name, mode)
			}
		}
	}
}

// TestCatalogVocabularyIsolation: a family's description names no other
// family's or any metric's vocabulary, and a metric's names no family's,
// so that no keyword match crosses over.
func TestCatalogVocabularyIsolation(t *testing.T) {
	_, by := catLoad(t)
	vocab := func(e Entry) []string { return append([]string{e.Name}, e.Disc.Aliases...) }
	check := func(owner Entry, others []string) {
		desc := " " + catNorm(owner.Name+" "+owner.Disc.Description) + " "
		for _, o := range others {
			if o == owner.Name {
				continue
			}
			for _, v := range vocab(by[o]) {
				if strings.Contains(desc, " "+catNorm(v)+" ") {
					t.Errorf("%s's description contains %q, vocabulary of %s", owner.Name, v, o)
				}
			}
		}
	}
	for _, f := range catFamilies {
		check(by[f], append(slices.Clone(catFamilies), catMetrics...))
	}
	for _, m := range catMetrics {
		check(by[m], catFamilies)
	}
}

// ---- a model of the discovery cascade (SPEC.md §4) -------------------------

var catTiers = []string{"exact", "alias", "tag", "keyword"}

// catDiscover returns the highest tier with any match for term and its
// matches.
func catDiscover(es []Entry, term string) (string, []Entry) {
	for _, tier := range catTiers {
		if got := catTier(es, term, tier); len(got) > 0 {
			return tier, got
		}
	}
	return "", nil
}

func catTier(es []Entry, term, tier string) []Entry {
	t := catNorm(term)
	if t == "" {
		return nil
	}
	eq := func(xs []string) bool {
		return slices.ContainsFunc(xs, func(x string) bool { return catNorm(x) == t })
	}
	var out []Entry
	for _, e := range es {
		var hit bool
		switch tier {
		case "exact":
			hit = catNorm(e.Name) == t
		case "alias":
			hit = eq(e.Disc.Aliases)
		case "tag":
			hit = eq(e.Disc.Tags)
		case "keyword":
			hit = strings.Contains(" "+catNorm(e.Name)+" ", " "+t+" ") ||
				strings.Contains(" "+catNorm(e.Disc.Description)+" ", " "+t+" ")
		}
		if hit {
			out = append(out, e)
		}
	}
	return out
}

func catNames(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name
	}
	sort.Strings(out)
	return out
}

// catNorm folds a term or a text for matching: lower case, possessives
// dropped, every run of characters other than letters, digits and '_' (so
// hyphens too) becomes one space, and plural words are made singular
// ("Sharpe's", "sharpe-ratios" -> "sharpe ratio").
func catNorm(s string) string {
	s = strings.ToLower(strings.ReplaceAll(s, "’", "'"))
	words := strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '\''
	})
	out := words[:0]
	for _, w := range words {
		w = strings.TrimSuffix(w, "'s")
		w = strings.Trim(w, "'")
		if w == "" {
			continue
		}
		switch {
		case len(w) > 4 && strings.HasSuffix(w, "ies"):
			w = w[:len(w)-3] + "y"
		case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
			w = w[:len(w)-1]
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

// ---- a tiny s-expression reader ---------------------------------------------

type catNode struct {
	atom string
	list []*catNode // non-nil for a list
}

func (n *catNode) String() string {
	if n.list == nil {
		return n.atom
	}
	parts := make([]string, len(n.list))
	for i, c := range n.list {
		parts[i] = c.String()
	}
	return "(" + strings.Join(parts, " ") + ")"
}

// kernels returns the set of kernel names called anywhere in n.
func (n *catNode) kernels() map[string]bool {
	out := map[string]bool{}
	var walk func(*catNode)
	walk = func(n *catNode) {
		if n.list == nil {
			return
		}
		if n.list[0].list == nil {
			out[n.list[0].atom] = true
		}
		for _, c := range n.list {
			walk(c)
		}
	}
	walk(n)
	return out
}

func catTokens(s string) []string {
	var toks []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			toks = append(toks, cur.String())
			cur.Reset()
		}
	}
	for _, r := range s {
		switch {
		case r == '(' || r == ')':
			flush()
			toks = append(toks, string(r))
		case unicode.IsSpace(r):
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return toks
}

// catParse reads exactly one s-expression: a list "(kernel arg ...)" whose
// arguments are lists or atoms. Empty lists are refused.
func catParse(s string) (*catNode, error) {
	toks := catTokens(s)
	pos := 0
	var read func() (*catNode, error)
	read = func() (*catNode, error) {
		if pos >= len(toks) {
			return nil, fmt.Errorf("unexpected end")
		}
		tok := toks[pos]
		pos++
		switch tok {
		case ")":
			return nil, fmt.Errorf("unexpected ')' at token %d", pos)
		case "(":
			n := &catNode{list: []*catNode{}}
			for {
				if pos >= len(toks) {
					return nil, fmt.Errorf("unclosed '('")
				}
				if toks[pos] == ")" {
					pos++
					if len(n.list) == 0 {
						return nil, fmt.Errorf("empty list")
					}
					return n, nil
				}
				c, err := read()
				if err != nil {
					return nil, err
				}
				n.list = append(n.list, c)
			}
		}
		return &catNode{atom: tok}, nil
	}
	root, err := read()
	if err != nil {
		return nil, err
	}
	if pos != len(toks) {
		return nil, fmt.Errorf("trailing tokens after the expression: %v", toks[pos:])
	}
	if root.list == nil {
		return nil, fmt.Errorf("want a list, got the atom %q", root.atom)
	}
	return root, nil
}

func TestCatalogSexpReader(t *testing.T) {
	good := map[string]string{
		"(dlog x)":                                "(dlog x)",
		" ( clip (wzs x $w) -1 1 ) ":              "(clip (wzs x $w) -1 1)",
		"(mul x (sqrt 252))":                      "(mul x (sqrt 252))",
		"(volsize (const 1) (dlog x) 60 0.1 1 1)": "(volsize (const 1) (dlog x) 60 0.1 1 1)",
	}
	for in, want := range good {
		n, err := catParse(in)
		if err != nil || n.String() != want {
			t.Errorf("catParse(%q) = %v, %v; want %s", in, n, err, want)
		}
	}
	for _, bad := range []string{"", "x", "()", "(dlog x", "(dlog x))", "(dlog x) (neg x)", ")("} {
		if _, err := catParse(bad); err == nil {
			t.Errorf("catParse(%q) accepted", bad)
		}
	}
	for in, want := range map[string]string{"Sharpe's": "sharpe", "sharpe-ratios": "sharpe ratio",
		"Mean  Reversion": "mean reversion", "strategies": "strategy", "log-returns": "log return", "z-score": "z score"} {
		if got := catNorm(in); got != want {
			t.Errorf("catNorm(%q) = %q, want %q", in, got, want)
		}
	}
}
