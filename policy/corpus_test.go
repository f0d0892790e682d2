package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundgate/groundgate/policy/smt"
)

// The corpus: the policies of testdata/corpus/policies.json decided through
// Checker.Check over a deterministic set of requests — every request by z3,
// the product's default solver, and a stratified sample of them by cvc5 as
// well — against an evaluator written here in plain Go that reads none of
// the package's code: it resolves pointers, checks sorts and evaluates each
// policy's rules at every grid point itself, numbers as exact rationals
// (math/big.Rat, as SMT-LIB reals are) taken from the decimal text a
// request carries, strings as Go strings.

const corpusRequests = 360

// corpusBudget bounds the whole corpus run, so that a checker too slow to
// use fails here with a message rather than at go test's deadline. z3
// needs about 15 s of CPU for the corpus and cvc5 about 10 s for its sample
// (refusals cost a least witness and a minimal core each, and six of the
// policies quantify free constants); the budget leaves room for a box
// loaded by other work.
const corpusBudget = 4 * time.Minute

// corpusTok is a request value as the request's JSON would carry it.
type corpusTok struct {
	kind byte // 'n' number (its decimal text), 's' string, 'b' boolean
	text string
}

func cnum(text string) corpusTok { return corpusTok{'n', text} }
func cstr(text string) corpusTok { return corpusTok{'s', text} }

func (t corpusTok) value() Value {
	switch t.kind {
	case 's':
		return Str(t.text)
	case 'b':
		return Boolean(t.text == "true")
	}
	f, err := strconv.ParseFloat(t.text, 64)
	if err != nil {
		panic(err)
	}
	return Num(f)
}

func (t corpusTok) String() string {
	if t.kind == 's' {
		return strconv.Quote(t.text)
	}
	return t.text
}

// corpusReq is one generated request.
type corpusReq struct {
	family, metric, data string
	params               map[string][]corpusTok
	defaults             map[string]corpusTok
	facts                map[string]corpusTok // nil: the request has none
	factsErr             bool                 // loading the facts fails
}

func (q corpusReq) String() string {
	var ps []string
	for _, k := range slices.Sorted(maps.Keys(q.params)) {
		ps = append(ps, fmt.Sprintf("%s=%v", k, q.params[k]))
	}
	facts := "facts:none"
	switch {
	case q.factsErr:
		facts = "facts:error"
	case q.facts != nil:
		var fs []string
		for _, k := range slices.Sorted(maps.Keys(q.facts)) {
			fs = append(fs, k+"="+q.facts[k].String())
		}
		facts = "facts:{" + strings.Join(fs, " ") + "}"
	}
	return fmt.Sprintf("%s/%s on %s %s %s", q.family, q.metric, q.data, strings.Join(ps, " "), facts)
}

// request builds the Request the checker sees; loads counts fact loads.
func (q corpusReq) request(loads *int) Request {
	r := Request{Family: q.family, Metric: q.metric, Data: q.data, Params: map[string][]Value{}, Defaults: map[string]Value{}}
	for k, ts := range q.params {
		for _, t := range ts {
			r.Params[k] = append(r.Params[k], t.value())
		}
	}
	for k, t := range q.defaults {
		r.Defaults[k] = t.value()
	}
	if q.facts != nil || q.factsErr {
		r.Facts = func() (map[string]Value, error) {
			*loads++
			if q.factsErr {
				return nil, errors.New("the data source cannot be read")
			}
			m := map[string]Value{}
			for k, t := range q.facts {
				m[k] = t.value()
			}
			return m, nil
		}
	}
	return r
}

// lookup resolves a pointer in the request: the values it takes (a grid
// axis has several), or false when the request does not give it.
func (q corpusReq) lookup(ptr string) ([]corpusTok, bool) {
	switch {
	case ptr == "/family":
		return []corpusTok{cstr(q.family)}, true
	case ptr == "/metric":
		return []corpusTok{cstr(q.metric)}, true
	case ptr == "/data":
		return []corpusTok{cstr(q.data)}, true
	case ptr == "/grid/points":
		n := 1
		for _, ts := range q.params {
			n *= max(len(ts), 1)
		}
		return []corpusTok{cnum(strconv.Itoa(n))}, true
	case strings.HasPrefix(ptr, "/params/"):
		name := strings.TrimPrefix(ptr, "/params/")
		if ts := q.params[name]; len(ts) > 0 {
			return ts, true
		}
		if d, ok := q.defaults[name]; ok {
			return []corpusTok{d}, true
		}
		return nil, false
	case strings.HasPrefix(ptr, "/facts/data/"):
		if q.factsErr || q.facts == nil {
			return nil, false
		}
		t, ok := q.facts[strings.TrimPrefix(ptr, "/facts/data/")]
		return []corpusTok{t}, ok
	}
	panic("corpus: pointer " + ptr)
}

// convert reads a token as a value of an SMT sort: *big.Rat for Int and
// Real, string, bool; false when it does not fit the sort.
func corpusConvert(t corpusTok, sort string) (any, bool) {
	switch sort {
	case "String":
		return t.text, t.kind == 's'
	case "Bool":
		return t.text == "true", t.kind == 'b'
	}
	if t.kind != 'n' {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(t.text)
	if !ok {
		panic("corpus: number " + t.text)
	}
	if sort == "Int" && (!r.IsInt() || r.Num().CmpAbs(big.NewInt(1<<53)) > 0) {
		return nil, false
	}
	return r, true
}

// corpusPoint is one grid point: each bound constant's value.
type corpusPoint map[string]any

func (p corpusPoint) rat(c string) *big.Rat { return p[c].(*big.Rat) }
func (p corpusPoint) str(c string) string   { return p[c].(string) }
func (p corpusPoint) bool(c string) bool    { return p[c].(bool) }

// corpusVerdict is a policy's refusal at one point: the reason and every
// core a solver may rightly give (each a subset-minimal set of rules).
type corpusVerdict struct {
	reason string
	cores  [][]string
}

// corpusRule is the evaluator's reading of one policy: the sorts of its
// bound constants and its verdict at a point (nil: admitted there).
type corpusRule struct {
	sorts map[string]string
	at    func(corpusPoint) *corpusVerdict
}

func crat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}

func cint(n int64) *big.Rat { return new(big.Rat).SetInt64(n) }

// broken: the rules named are each violated, and each alone forbids allow
// (or contradicts the binding), so a minimal core is any one of them.
func cbroken(rules ...string) *corpusVerdict {
	if len(rules) == 0 {
		return nil
	}
	v := &corpusVerdict{reason: ReasonViolated}
	for _, r := range rules {
		v.cores = append(v.cores, []string{r})
	}
	return v
}

// when returns name if cond holds.
func cwhen(cond bool, name string) []string {
	if cond {
		return []string{name}
	}
	return nil
}

func ccat(xs ...[]string) []string { return slices.Concat(xs...) }

// corpusRules: each policy of the corpus, evaluated in Go.
var corpusRules = map[string]corpusRule{
	"leverage_by_class": {sorts: map[string]string{"leverage": "Real", "data": "String"}, at: func(p corpusPoint) *corpusVerdict {
		lev, data := p.rat("leverage"), p.str("data")
		commodity := strings.HasPrefix(data, "oil-spot/") || strings.HasPrefix(data, "natural-gas/") || strings.HasPrefix(data, "eia-nymex-futures/")
		fx := strings.HasPrefix(data, "fx-fed-h10/")
		rates := strings.HasPrefix(data, "us-treasury-rates/")
		return cbroken(ccat(
			cwhen(commodity && lev.Cmp(crat("2")) > 0, "commodity_at_most_2"),
			cwhen(fx && lev.Cmp(crat("3")) > 0, "fx_at_most_3"),
			cwhen(rates && lev.Cmp(crat("1.5")) > 0, "rates_at_most_1_5"),
			cwhen(!commodity && !fx && !rates && lev.Cmp(crat("1")) > 0, "other_at_most_1"),
			cwhen(lev.Sign() <= 0, "leverage_positive"))...)
	}},
	"grid_points_cap": {sorts: map[string]string{"points": "Int"}, at: func(p corpusPoint) *corpusVerdict {
		// allow's own definition forbids the point as well as the named
		// rule, so a minimal core may name the rule or nothing (z3 names
		// nothing, cvc5 the rule; docs/policies.md: an empty core means
		// allow's definition forbids it).
		if p.rat("points").Cmp(cint(128)) > 0 {
			return &corpusVerdict{reason: ReasonViolated, cores: [][]string{{"at_most_128_points"}, {}}}
		}
		return nil
	}},
	"risk_lookback": {sorts: map[string]string{"window": "Int", "risk_window": "Int"}, at: func(p corpusPoint) *corpusVerdict {
		w, rw := p.rat("window"), p.rat("risk_window")
		return cbroken(ccat(
			cwhen(new(big.Rat).Mul(cint(3), rw).Cmp(w) < 0, "risk_window_at_least_third_of_window"),
			cwhen(rw.Cmp(cint(10)) < 0, "risk_window_at_least_10"))...)
	}},
	"target_vol_band": {sorts: map[string]string{"target_vol": "Real"}, at: func(p corpusPoint) *corpusVerdict {
		tv := p.rat("target_vol")
		return cbroken(ccat(
			cwhen(tv.Cmp(crat("0.02")) < 0 || tv.Cmp(crat("0.25")) > 0, "target_vol_in_band"),
			cwhen(new(big.Rat).Add(tv, crat("0.2")).Cmp(crat("0.3")) > 0, "target_vol_headroom"))...)
	}},
	"embargo_2024": {sorts: map[string]string{"last_date": "Int"}, at: func(p corpusPoint) *corpusVerdict {
		return cbroken(cwhen(p.rat("last_date").Cmp(crat("20241231")) > 0, "no_data_after_2024")...)
	}},
	"data_licence": {sorts: map[string]string{"data": "String"}, at: func(p corpusPoint) *corpusVerdict {
		d := p.str("data")
		return cbroken(ccat(cwhen(strings.HasPrefix(d, "equity-"), "no_vendor_equity"), cwhen(d == "vix/vix-daily.csv", "no_cboe_vix"))...)
	}},
	"drawdown_history": {sorts: map[string]string{"span_days": "Int", "metric": "String"}, at: func(p corpusPoint) *corpusVerdict {
		need := cint(730)
		if p.str("metric") == "CLM" {
			need = cint(1095)
		}
		return cbroken(cwhen(p.rat("span_days").Cmp(need) < 0, "enough_history_for_drawdown")...)
	}},
	"carry_curve": {sorts: map[string]string{"front": "String", "next": "String"}, at: func(p corpusPoint) *corpusVerdict {
		f, n := p.str("front"), p.str("next")
		return cbroken(ccat(cwhen(f == n, "distinct_curve_points"), cwhen(f != "C1" && f != "C2", "front_is_c1_or_c2"))...)
	}},
	"lag_bounds": {sorts: map[string]string{"lag": "Int"}, at: func(p corpusPoint) *corpusVerdict {
		lag := p.rat("lag")
		return cbroken(ccat(cwhen(lag.Cmp(cint(1)) < 0, "lag_at_least_1"), cwhen(lag.Cmp(cint(5)) > 0, "lag_at_most_5"))...)
	}},
	"history_rows": {sorts: map[string]string{"rows": "Int", "risk_window": "Int", "lag": "Int"}, at: func(p corpusPoint) *corpusVerdict {
		need := new(big.Rat).Mul(cint(3), new(big.Rat).Add(p.rat("risk_window"), p.rat("lag")))
		return cbroken(cwhen(p.rat("rows").Cmp(need) <= 0, "rows_cover_three_risk_windows")...)
	}},
	"sign_off_unbound": {sorts: map[string]string{"leverage": "Real"}, at: func(p corpusPoint) *corpusVerdict {
		// allow is consistent with the rules (signed_off true) but not
		// entailed (signed_off false): no named rule forbids it.
		if p.rat("leverage").Cmp(crat("1.5")) > 0 {
			return &corpusVerdict{reason: ReasonUndetermined, cores: [][]string{{}}}
		}
		return nil
	}},
	"paper_style_caps": {sorts: map[string]string{"risk_window": "Int", "leverage": "Real", "target_vol": "Real"}, at: func(p corpusPoint) *corpusVerdict {
		return cbroken(ccat(
			cwhen(p.rat("risk_window").Cmp(cint(250)) > 0, "risk_window_at_most_250"),
			cwhen(p.rat("leverage").Cmp(crat("2.5")) > 0, "leverage_at_most_2_5"),
			cwhen(p.rat("target_vol").Sign() <= 0, "target_vol_positive"))...)
	}},
	"budget_conflict": {sorts: map[string]string{"window": "Int"}, at: func(p corpusPoint) *corpusVerdict {
		// No budget is both ≥ 2·window and ≤ 100: the two rules together.
		if new(big.Rat).Mul(cint(2), p.rat("window")).Cmp(cint(100)) > 0 {
			return &corpusVerdict{reason: ReasonViolated, cores: [][]string{{"budget_at_most_100", "budget_covers_window"}}}
		}
		return nil
	}},
	"hit_vacuous": {sorts: map[string]string{}, at: func(corpusPoint) *corpusVerdict {
		return &corpusVerdict{reason: ReasonViolated, cores: [][]string{{"x_above_5", "x_below_3"}}}
	}},
	"positive_prices": {sorts: map[string]string{"non_positive": "Bool", "min_price": "Real"}, at: func(p corpusPoint) *corpusVerdict {
		return cbroken(ccat(
			cwhen(p.bool("non_positive"), "no_non_positive_prices"),
			cwhen(p.rat("min_price").Cmp(crat("0.5")) < 0, "min_price_at_least_half"))...)
	}},
	"vol_tgt_family_leverage": {sorts: map[string]string{"family": "String", "leverage": "Real"}, at: func(p corpusPoint) *corpusVerdict {
		return cbroken(cwhen(p.str("family") == "VOL_TGT" && p.rat("leverage").Cmp(crat("1.25")) > 0, "vol_tgt_leverage_at_most_1_25")...)
	}},
	"signal_only": {sorts: map[string]string{}, at: func(corpusPoint) *corpusVerdict {
		return &corpusVerdict{reason: ReasonViolated, cores: [][]string{{}}}
	}},
	"fx_gap": {sorts: map[string]string{"data": "String", "max_gap_days": "Int", "first_date": "Int"}, at: func(p corpusPoint) *corpusVerdict {
		return cbroken(ccat(
			cwhen(strings.HasPrefix(p.str("data"), "fx-fed-h10/") && p.rat("max_gap_days").Cmp(cint(5)) > 0, "fx_gap_at_most_5_days"),
			cwhen(p.rat("first_date").Cmp(crat("19750101")) < 0, "starts_in_1975_or_later"))...)
	}},
}

// corpusPolicy is the evaluator's own reading of policies.json.
type corpusPolicy struct {
	Bind      map[string]string `json:"bind"`
	AppliesTo []string          `json:"applies_to"`
}

// applies: a policy governs a request it names by family or metric, or
// every request when it names the family or metric kind.
func (p corpusPolicy) applies(q corpusReq) bool {
	for _, a := range p.AppliesTo {
		if a == "family" || a == "metric" || a == q.family || a == q.metric {
			return true
		}
	}
	return false
}

// corpusExpect is the evaluator's verdict of one policy on one request.
type corpusExpect struct {
	applies bool
	pre     string      // "missing" or "type": refused before any point
	badTok  []corpusTok // for "type": the values that do not fit
	refuses bool
	reasons map[string]bool // reasons over the refusing points
	cores   map[string]bool // cores over the refusing points, joined by ","
}

func (p corpusPolicy) evaluate(rule corpusRule, q corpusReq) corpusExpect {
	e := corpusExpect{applies: p.applies(q), reasons: map[string]bool{}, cores: map[string]bool{}}
	if !e.applies {
		return e
	}
	consts := slices.Sorted(maps.Keys(p.Bind))
	axes := make([][]any, len(consts))
	for i, c := range consts {
		toks, ok := q.lookup(p.Bind[c])
		if !ok {
			e.pre, e.refuses = ReasonMissing, true
			return e
		}
		for _, t := range toks {
			v, ok := corpusConvert(t, rule.sorts[c])
			if !ok {
				e.badTok = append(e.badTok, t)
				continue
			}
			axes[i] = append(axes[i], v)
		}
		if len(e.badTok) > 0 {
			e.pre, e.refuses = ReasonType, true
			return e
		}
	}
	idx := make([]int, len(consts))
	for {
		pt := corpusPoint{}
		for i, c := range consts {
			pt[c] = axes[i][idx[i]]
		}
		if v := rule.at(pt); v != nil {
			e.refuses = true
			e.reasons[v.reason] = true
			for _, c := range v.cores {
				e.cores[strings.Join(c, ",")] = true
			}
		}
		i := 0
		for ; i < len(idx); i++ {
			if idx[i]++; idx[i] < len(axes[i]) {
				break
			}
			idx[i] = 0
		}
		if i == len(idx) {
			return e
		}
	}
}

// judge checks one refusal against the evaluator and returns what is
// wrong with it ("" when nothing).
func (p corpusPolicy) judge(rule corpusRule, q corpusReq, e corpusExpect, r Refusal) string {
	if e.pre != "" {
		switch {
		case r.Reason != e.pre:
			return fmt.Sprintf("reason %s, the evaluator says %s", r.Reason, e.pre)
		case len(r.Core) != 0:
			return fmt.Sprintf("a %s refusal with core %v", r.Reason, r.Core)
		case e.pre == ReasonType && (len(r.Witness) != 1 || !slices.ContainsFunc(e.badTok, func(t corpusTok) bool { return t.value() == r.Witness[0].Value })):
			return fmt.Sprintf("type refusal names %v, the values that do not fit are %v", r.Witness, e.badTok)
		}
		return ""
	}
	// A grid refusal: its witness must be a grid point where the evaluator
	// refuses for the same reason, with one of the cores it allows there.
	if len(r.Witness) != len(p.Bind) {
		return fmt.Sprintf("witness %v does not give every bound constant %v", r.Witness, p.Bind)
	}
	pt := corpusPoint{}
	for _, a := range r.Witness {
		if p.Bind[a.Const] != a.Pointer {
			return fmt.Sprintf("witness binds %s to %s, the policy to %q", a.Const, a.Pointer, p.Bind[a.Const])
		}
		toks, _ := q.lookup(a.Pointer)
		i := slices.IndexFunc(toks, func(t corpusTok) bool { return t.value() == a.Value })
		if i < 0 {
			return fmt.Sprintf("witness %s=%s is not a value of the grid %v", a.Const, a.Value, toks)
		}
		pt[a.Const], _ = corpusConvert(toks[i], rule.sorts[a.Const])
	}
	v := rule.at(pt)
	switch {
	case v == nil:
		return fmt.Sprintf("witness %v is a point the evaluator admits", r.Witness)
	case v.reason != r.Reason:
		return fmt.Sprintf("reason %s at %v, the evaluator says %s", r.Reason, r.Witness, v.reason)
	case !slices.ContainsFunc(v.cores, func(c []string) bool { return slices.Equal(c, r.Core) }):
		return fmt.Sprintf("core %v at %v, the evaluator allows %v", r.Core, r.Witness, v.cores)
	}
	return ""
}

// corpusFacts are the facts the test gives each bundled data source (from
// sampledata/README.md, rounded where it does not say).
var corpusFacts = map[string]struct {
	rows, assets, gap     int
	first, last, minPrice string
	nonPositive           bool
}{
	"oil-spot/wti-daily.csv":                      {10226, 1, 4, "1986-01-02", "2026-08-18", "-36.98", true},
	"oil-spot/brent-daily.csv":                    {9958, 1, 4, "1987-05-20", "2026-08-18", "9.1", false},
	"natural-gas/daily.csv":                       {7437, 1, 15, "1997-01-07", "2026-08-18", "1.05", false},
	"eia-nymex-futures/crude-oil-wti-cushing.csv": {9766, 4, 4, "1983-03-30", "2022-02-15", "-37.63", true},
	"eia-nymex-futures/heating-oil-nyh.csv":       {10567, 4, 4, "1980-01-02", "2022-02-15", "0.2925", false},
	"vix/vix-daily.csv":                           {9235, 4, 7, "1990-01-02", "2026-07-23", "9.14", false},
	"fx-fed-h10/daily.csv":                        {12240, 22, 3, "1971-01-04", "2017-12-01", "0.4177", false},
	"equity-stocks-ffn/test_data.csv":             {2517, 3, 4, "2004-03-10", "2014-03-10", "1.01", false},
	"equity-index-arch/sp500.csv.gz":              {5031, 1, 7, "1999-01-04", "2018-12-31", "676.53", false},
	"us-treasury-rates/DTB3.csv":                  {6804, 1, 4, "2000-01-03", "2026-01-29", "0", true},
	"us-treasury-rates/DGS10.csv":                 {5515, 1, 4, "2005-01-03", "2026-02-20", "0.52", false},
}

// Parameter values the generator draws from: caps exactly, just above and
// below them, decimals with no exact binary form, values of the wrong type.
var (
	corpusFamilies = []string{"MOM_WZS", "MOM_REV", "CARRY", "VOL_TGT"}
	corpusMetrics  = []string{"", "SRP", "MDD", "ARET", "AVOL", "SRT", "CLM", "HIT", "TRN", "TRET"}
	corpusParams   = map[string][]string{
		"MOM_WZS": {"window", "risk_window", "leverage", "target_vol", "lag"},
		"MOM_REV": {"window", "risk_window", "leverage", "target_vol", "lag"},
		"CARRY":   {"window", "front", "next", "risk_window", "leverage", "target_vol", "lag"},
		"VOL_TGT": {"risk_window", "leverage", "target_vol", "lag"},
	}
	corpusPool = map[string][]corpusTok{
		"window":      cnums("2", "5", "10", "20", "30", "40", "50", "51", "60", "80", "100", "120", "200", "250"),
		"risk_window": cnums("2", "5", "9", "10", "11", "17", "19", "20", "30", "60", "100", "250", "251", "300", "1000", "3000", "3500"),
		"leverage": cnums("-0.5", "0", "0.1", "0.5", "1", "1.0", "1.25", "1.2500001", "1.5", "1.50", "1.5000001", "2", "2.0",
			"2.0000001", "2.5", "2.50", "2.5000001", "3", "3.0", "3.1", "0.30000000000000004", "1e0", "2.5e-1"),
		"target_vol": cnums("0", "0.01", "0.019", "0.02", "0.05", "0.1", "0.10", "0.1000001", "0.09999999", "0.15", "0.25",
			"0.2500001", "0.3", "1e-1", "-0.1"),
		"lag":   cnums("-1", "0", "1", "2", "5", "6", "10"),
		"front": cstrs("C1", "C2", "C3", "C4", `C"2`, `C\1`, "Ç1", "", "C1 "),
		"next":  cstrs("C1", "C2", "C3", "C4", `C"2`, `C\1`, "Ç1", "", "C1 "),
	}
	// corpusWrong: a value of the wrong type for each parameter.
	corpusWrong = map[string][]corpusTok{
		"window":      {cnum("20.5"), cstr("20")},
		"risk_window": {cnum("60.5"), cstr("60")},
		"leverage":    {cstr("2")},
		"target_vol":  {cstr("0.1")},
		"lag":         {cnum("1.5")},
		"front":       {cnum("1")},
		"next":        {cnum("2")},
	}
	corpusDefaults = map[string]corpusTok{"risk_window": cnum("60"), "leverage": cnum("1"), "target_vol": cnum("0.1"), "lag": cnum("1")}
	// corpusShapes are grid shapes (axis lengths): around the 128-point cap.
	corpusShapes = [][]int{{2}, {3}, {5}, {8}, {2, 3}, {4, 4}, {6, 7}, {8, 16}, {2, 64}, {3, 43}, {2, 2, 32}, {4, 4, 8},
		{10, 13}, {3, 3, 15}, {16, 16}, {127}, {128}, {129}, {2, 3, 50}, {4, 5, 6}}
)

func cnums(xs ...string) []corpusTok {
	out := make([]corpusTok, len(xs))
	for i, x := range xs {
		out[i] = cnum(x)
	}
	return out
}

func cstrs(xs ...string) []corpusTok {
	out := make([]corpusTok, len(xs))
	for i, x := range xs {
		out[i] = cstr(x)
	}
	return out
}

// corpusGenerate makes the corpus requests, the same every run.
func corpusGenerate(n int) []corpusReq {
	rng := rand.New(rand.NewPCG(11, 2024))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	datas := slices.Sorted(maps.Keys(corpusFacts))
	var out []corpusReq
	for range n {
		q := corpusReq{family: pick(corpusFamilies), metric: pick(corpusMetrics), data: pick(datas),
			params: map[string][]corpusTok{}, defaults: map[string]corpusTok{}}
		names := corpusParams[q.family]
		for _, p := range names {
			if d, ok := corpusDefaults[p]; ok {
				q.defaults[p] = d
			}
		}
		if q.family == "CARRY" {
			q.defaults["front"], q.defaults["next"] = cstr("C1"), cstr("C2")
		}
		// The grid: some parameters span axes, the others are set or left
		// to their defaults.
		var shape []int
		if rng.IntN(100) < 60 {
			shape = corpusShapes[rng.IntN(len(corpusShapes))]
		}
		order := rng.Perm(len(names))
		for i, pi := range order {
			p := names[pi]
			switch {
			case i < len(shape):
				q.params[p] = corpusAxis(rng, p, shape[i])
			case p == "window" && rng.IntN(100) < 8, p != "window" && rng.IntN(100) < 40:
				// left out: the default, or (window) missing
			default:
				pool := corpusPool[p]
				q.params[p] = []corpusTok{pool[rng.IntN(len(pool))]}
			}
			if rng.IntN(100) < 3 && len(q.params[p]) > 0 {
				wrong := corpusWrong[p]
				q.params[p][rng.IntN(len(q.params[p]))] = wrong[rng.IntN(len(wrong))]
			}
		}
		q.facts, q.factsErr = corpusFactsFor(rng, q.data)
		out = append(out, q)
	}
	return out
}

// corpusAxis is n values for parameter p: from its pool when it has that
// many, else a run of decimals or integers.
func corpusAxis(rng *rand.Rand, p string, n int) []corpusTok {
	pool := corpusPool[p]
	if n <= len(pool) {
		var out []corpusTok
		for _, i := range rng.Perm(len(pool))[:n] {
			out = append(out, pool[i])
		}
		return out
	}
	out := make([]corpusTok, n)
	switch p {
	case "front", "next":
		for i := range out {
			out[i] = cstr(fmt.Sprintf("C%d", i+1))
		}
	case "leverage", "target_vol":
		// hundredths: 0.01, 0.02, … (with "1" for 1.00), from a random start
		start, step := rng.IntN(20), 1+rng.IntN(3)
		for i := range out {
			c := start + i*step
			out[i] = cnum(strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%d.%02d", c/100, c%100), "0"), "."))
		}
	default:
		start, step := rng.IntN(30), 1+rng.IntN(3)
		for i := range out {
			out[i] = cnum(strconv.Itoa(start + i*step))
		}
	}
	return out
}

// corpusFactsFor gives a request's facts: the data source's, sometimes
// moved to a boundary, missing one, absent or failing to load.
func corpusFactsFor(rng *rand.Rand, data string) (map[string]corpusTok, bool) {
	f := corpusFacts[data]
	first, _ := time.Parse(time.DateOnly, f.first)
	last, _ := time.Parse(time.DateOnly, f.last)
	m := map[string]corpusTok{
		"rows": cnum(strconv.Itoa(f.rows)), "assets": cnum(strconv.Itoa(f.assets)), "max_gap_days": cnum(strconv.Itoa(f.gap)),
		"span_days": cnum(strconv.Itoa(int(last.Sub(first).Hours() / 24))), "first_date": cnum(yyyymmdd(f.first)), "last_date": cnum(yyyymmdd(f.last)),
		"min_price": cnum(f.minPrice), "non_positive": {'b', strconv.FormatBool(f.nonPositive)},
	}
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	switch k := rng.IntN(100); {
	case k < 8:
		// The last is a date as a string: a type refusal.
		if s := pick("20241230", "20241231", "20250101", "2024-12-31"); strings.Contains(s, "-") {
			m["last_date"] = cstr(s)
		} else {
			m["last_date"] = cnum(s)
		}
	case k < 15:
		m["rows"] = cnum(pick("180", "300", "600"))
		m["span_days"] = cnum(pick("729", "730", "731", "1094", "1095", "1096"))
	case k < 20:
		m["max_gap_days"] = cnum(pick("5", "6", "15"))
	case k < 24:
		m["first_date"] = cnum(pick("19741231", "19750101", "19750102"))
	case k < 28:
		return nil, false
	case k < 31:
		return nil, true
	case k < 34:
		delete(m, pick(slices.Sorted(maps.Keys(m))...))
	}
	return m, false
}

// corpusPools starts a pool of each solver; the test fails if one is not
// installed (bash scripts/test.sh installs both).
func corpusPools(t testing.TB) map[string]*smt.Pool {
	t.Helper()
	out := map[string]*smt.Pool{}
	for _, s := range []smt.Solver{smt.Z3(), smt.CVC5()} {
		if err := s.Available(); err != nil {
			t.Fatal(err)
		}
		p := smt.NewPool(s, 1)
		t.Cleanup(func() { p.Close() })
		out[string(s.Kind)] = p
	}
	return out
}

// corpusCrossEach: cvc5 decides every request that brings a stratum of the
// corpus (a policy with the evaluator's verdict on it, a grid size, a kind
// of facts) to this many cross-checked requests.
const corpusCrossEach = 5

// corpusStrata names what a request exercises, from the evaluator's
// verdicts alone: each governing policy with its verdict (admitted, or the
// reasons it refuses for), the size of the grid, and the facts it brings.
func corpusStrata(q corpusReq, expect map[string]corpusExpect) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(expect)) {
		e := expect[name]
		switch {
		case !e.applies:
			continue
		case e.pre != "":
			out = append(out, name+"/"+e.pre)
		case e.refuses:
			out = append(out, name+"/"+strings.Join(slices.Sorted(maps.Keys(e.reasons)), "+"))
		default:
			out = append(out, name+"/admitted")
		}
	}
	n := 1
	for _, ts := range q.params {
		n *= len(ts)
	}
	switch {
	case n >= 128:
		out = append(out, "grid/128+")
	case n > 16:
		out = append(out, "grid/17-127")
	case n > 1:
		out = append(out, "grid/2-16")
	default:
		out = append(out, "grid/1")
	}
	switch {
	case q.factsErr:
		out = append(out, "facts/error")
	case q.facts == nil:
		out = append(out, "facts/none")
	default:
		out = append(out, "facts/given")
	}
	return out
}

// corpusCrossSample picks the requests cvc5 decides too: in corpus order,
// each one that has a stratum cross-checked fewer than each times so far.
// Every stratum of the corpus is cross-checked at least each times (or
// every time it occurs, when rarer); it returns the strata's counts.
func corpusCrossSample(strata [][]string, each int) ([]bool, map[string]int) {
	picked := make([]bool, len(strata))
	count := map[string]int{}
	for i, ss := range strata {
		if !slices.ContainsFunc(ss, func(s string) bool { return count[s] < each }) {
			continue
		}
		picked[i] = true
		for _, s := range ss {
			count[s]++
		}
	}
	return picked, count
}

func TestCorpus(t *testing.T) {
	raw, err := os.ReadFile("testdata/corpus/policies.json")
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := ParseFile("policies.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	var own map[string]corpusPolicy
	if err := json.Unmarshal(raw, &own); err != nil {
		t.Fatal(err)
	}
	if len(own) < 12 || len(own) != len(corpusRules) || len(compiled) != len(own) {
		t.Fatalf("%d policies in the file, %d compiled, %d evaluated in Go: want the same ≥ 12", len(own), len(compiled), len(corpusRules))
	}
	for name, p := range own {
		rule, ok := corpusRules[name]
		if !ok {
			t.Fatalf("no Go evaluation of policy %s", name)
		}
		if len(rule.sorts) != len(p.Bind) {
			t.Fatalf("policy %s binds %v, its Go evaluation reads %v", name, p.Bind, rule.sorts)
		}
	}
	pools := corpusPools(t)
	ctx := context.Background()
	for kind, pool := range pools {
		k := NewChecker(pool, 10*time.Second)
		for _, c := range compiled {
			if err := k.Validate(ctx, c); err != nil {
				t.Fatalf("%s: Validate(%s): %v", kind, c.Name, err)
			}
		}
	}

	// The evaluator's verdicts first: they say which policies govern each
	// request, and which requests cvc5 cross-checks.
	reqs := corpusGenerate(corpusRequests)
	governing := make([][]*Compiled, len(reqs))
	expects := make([]map[string]corpusExpect, len(reqs))
	strata := make([][]string, len(reqs))
	disagree := 0
	for i, q := range reqs {
		expects[i] = map[string]corpusExpect{}
		for _, c := range compiled {
			e := own[c.Name].evaluate(corpusRules[c.Name], q)
			expects[i][c.Name] = e
			if c.AppliesTo(q.family, q.metric) != e.applies {
				t.Errorf("request %d (%s): AppliesTo(%s) = %v, the evaluator says %v", i, q, c.Name, !e.applies, e.applies)
				disagree++
			}
			if e.applies {
				governing[i] = append(governing[i], c)
			}
		}
		strata[i] = corpusStrata(q, expects[i])
	}
	cross, strataCount := corpusCrossSample(strata, corpusCrossEach)

	// z3, the product's default solver, decides every request; cvc5 the
	// cross-checked ones. Each has its own process and goroutine, so the
	// two run at once; the checks below read their answers.
	type answer struct {
		decided bool
		rs      []Refusal
		err     error
		took    time.Duration
		loads   int
	}
	answers := map[string][]answer{"z3": make([]answer, len(reqs)), "cvc5": make([]answer, len(reqs))}
	budget, cancel := context.WithTimeout(ctx, corpusBudget)
	defer cancel()
	var wg sync.WaitGroup
	for kind, as := range answers {
		k := NewChecker(pools[kind], 10*time.Second)
		wg.Go(func() {
			for i, q := range reqs {
				if kind == "cvc5" && !cross[i] {
					continue
				}
				a := &as[i]
				start := time.Now()
				a.rs, a.err = k.Check(budget, governing[i], q.request(&a.loads))
				a.took, a.decided = time.Since(start), true
				if a.err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	took := map[string]time.Duration{}
	decided := map[string]int{}
	perRequest := map[string][]time.Duration{}
	for kind, as := range answers {
		for _, a := range as {
			if a.decided && a.err == nil {
				took[kind] += a.took
				decided[kind]++
				perRequest[kind] = append(perRequest[kind], a.took)
			}
		}
	}
	if budget.Err() != nil {
		t.Fatalf("the corpus ran out of its %s budget: z3 decided %d of %d requests in %s, cvc5 %d of its %d in %s: the checker is too slow",
			corpusBudget, decided["z3"], len(reqs), took["z3"].Round(time.Second), decided["cvc5"], countTrue(cross), took["cvc5"].Round(time.Second))
	}

	type tally struct{ refused, admitted int }
	perPolicy := map[string]*tally{}
	reasons := map[string]int{}
	var (
		refusals, points, maxPoints, solverDiff            int
		coreDetermined, coreSame, witnessSame, allRefusing int
		crossChecked                                       int
	)
	for i, q := range reqs {
		cs, expect := governing[i], expects[i]
		n := 1
		for _, ts := range q.params {
			n *= len(ts)
		}
		points += n
		maxPoints = max(maxPoints, n)

		got := map[string]map[string]Refusal{}
		for _, kind := range []string{"z3", "cvc5"} {
			a := answers[kind][i]
			if !a.decided {
				continue
			}
			rs, err, loads := a.rs, a.err, a.loads
			if err != nil {
				t.Fatalf("%s: request %d (%s): %v", kind, i, q, err)
			}
			bindsFacts := slices.ContainsFunc(cs, func(c *Compiled) bool {
				return slices.ContainsFunc(c.Pointers(), func(p Pointer) bool { return p.Field == "facts" })
			})
			if loads > 1 || loads > 0 && !bindsFacts {
				t.Errorf("%s: request %d: facts loaded %d times (a governing policy binds facts: %v)", kind, i, loads, bindsFacts)
			}
			got[kind] = map[string]Refusal{}
			for _, r := range rs {
				if _, dup := got[kind][r.Policy]; dup {
					t.Errorf("%s: request %d: policy %s refuses twice", kind, i, r.Policy)
				}
				got[kind][r.Policy] = r
			}
			for _, c := range cs {
				e := expect[c.Name]
				r, refused := got[kind][c.Name]
				switch {
				case refused != e.refuses:
					t.Errorf("%s: request %d (%s): policy %s refused=%v (%+v), the evaluator says %v", kind, i, q, c.Name, refused, r, e.refuses)
					disagree++
				case refused:
					if msg := own[c.Name].judge(corpusRules[c.Name], q, e, r); msg != "" {
						t.Errorf("%s: request %d (%s): policy %s: %s", kind, i, q, c.Name, msg)
						disagree++
					}
				}
			}
			for name := range got[kind] {
				if !expect[name].applies {
					t.Errorf("%s: request %d: refusal by %s, which does not govern the request", kind, i, name)
					disagree++
				}
			}
		}
		z, ok := got["z3"]
		if !ok {
			t.Fatalf("request %d: z3 did not decide it", i)
		}
		for _, c := range cs {
			tl := perPolicy[c.Name]
			if tl == nil {
				tl = &tally{}
				perPolicy[c.Name] = tl
			}
			if _, ok := z[c.Name]; ok {
				tl.refused++
			} else {
				tl.admitted++
			}
		}
		if len(cs) > 0 && len(z) == len(cs) {
			allRefusing++
		}
		for _, r := range z {
			refusals++
			reasons[r.Reason]++
		}

		// z3 and cvc5: the same refusing policies; the same reasons and
		// cores wherever the evaluator leaves them no choice.
		c5, ok := got["cvc5"]
		if !ok {
			continue
		}
		crossChecked++
		if !slices.Equal(slices.Sorted(maps.Keys(z)), slices.Sorted(maps.Keys(c5))) {
			t.Errorf("request %d (%s): z3 refuses %v, cvc5 %v", i, q, slices.Sorted(maps.Keys(z)), slices.Sorted(maps.Keys(c5)))
			solverDiff++
		}
		for name, rz := range z {
			rc, ok := c5[name]
			if !ok {
				continue
			}
			e := expect[name]
			if (e.pre != "" || len(e.reasons) == 1) && rz.Reason != rc.Reason {
				t.Errorf("request %d: policy %s: z3 %s, cvc5 %s", i, name, rz.Reason, rc.Reason)
				solverDiff++
			}
			if e.pre == "" && len(e.cores) == 1 {
				coreDetermined++
				if !slices.Equal(rz.Core, rc.Core) {
					t.Errorf("request %d: policy %s: z3 core %v, cvc5 core %v", i, name, rz.Core, rc.Core)
					solverDiff++
				}
			}
			if slices.Equal(rz.Core, rc.Core) {
				coreSame++
			}
			if fmt.Sprint(rz.Witness) == fmt.Sprint(rc.Witness) {
				witnessSame++
			}
		}
	}
	if n := countTrue(cross); crossChecked != n {
		t.Errorf("cvc5 decided %d requests, want the %d of the cross-check sample", crossChecked, n)
	}

	// The corpus must exercise what it claims to: every governing policy
	// both admits and refuses (except the one that refuses everything and
	// the one that governs nothing), and every reason occurs.
	for name := range own {
		tl := perPolicy[name]
		switch name {
		case "signal_only":
			if tl != nil {
				t.Errorf("signal_only governed %d requests, want none", tl.refused+tl.admitted)
			}
		case "hit_vacuous":
			if tl == nil || tl.refused < 5 || tl.admitted != 0 {
				t.Errorf("hit_vacuous: %+v, want ≥ 5 refusals and no admission", tl)
			}
		default:
			if tl == nil || tl.refused < 3 || tl.admitted < 3 {
				t.Errorf("policy %s: %+v, want ≥ 3 refusals and ≥ 3 admissions in the corpus", name, tl)
			}
		}
	}
	for _, r := range []string{ReasonViolated, ReasonUndetermined, ReasonMissing, ReasonType} {
		if reasons[r] < 5 {
			t.Errorf("only %d refusals for reason %s in the corpus", reasons[r], r)
		}
	}
	pct := func(kind string, p int) time.Duration {
		ds := slices.Clone(perRequest[kind])
		slices.Sort(ds)
		return ds[(len(ds)-1)*p/100].Round(10 * time.Microsecond)
	}
	t.Logf("corpus: %d requests (%d grid points, largest grid %d), %d policies; z3: %d refusals (%v); "+
		"%d requests refused by every governing policy; disagreements with the Go evaluator: %d",
		len(reqs), points, maxPoints, len(own), refusals, reasons, allRefusing, disagree)
	t.Logf("cvc5 cross-checked %d requests (%d strata, each in ≥ %d of them or in all that have it): z3 vs cvc5 differences: %d; "+
		"cores determined by the evaluator %d, identical cores %d, identical witnesses %d",
		crossChecked, len(strataCount), corpusCrossEach, solverDiff, coreDetermined, coreSame, witnessSame)
	for _, kind := range []string{"z3", "cvc5"} {
		t.Logf("  %-4s %3d requests, total %s, per request p50 %s p99 %s max %s", kind, decided[kind], took[kind].Round(time.Millisecond), pct(kind, 50), pct(kind, 99), pct(kind, 100))
	}
	for _, name := range slices.Sorted(maps.Keys(perPolicy)) {
		t.Logf("  %-24s refused %3d, admitted %3d", name, perPolicy[name].refused, perPolicy[name].admitted)
	}
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// yyyymmdd writes a YYYY-MM-DD date as policies read it: 20250630.
func yyyymmdd(d string) string { return strings.ReplaceAll(d, "-", "") }
