package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// diffVariant is the shipped set with every occurrence of each from→to
// replaced (each must occur).
func diffVariant(t *testing.T, pairs ...string) []*Compiled {
	t.Helper()
	raw, err := os.ReadFile("testdata/trading.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("the shipped set has no %q", pairs[i])
		}
		s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
	}
	cs, err := ParseFile("trading.json", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// diffRequest writes a witness as a request, independently of
// Witness.Request: one-value params, a grid of N points spanned by a param
// no policy binds, the facts as given, no defaults.
func diffRequest(t *testing.T, w *Witness) Request {
	t.Helper()
	r := Request{Params: map[string][]Value{}, Defaults: map[string]Value{}}
	if w.Family != nil {
		r.Family = *w.Family
	}
	if w.Metric != nil {
		r.Metric = *w.Metric
	}
	if w.Data != nil {
		r.Data = *w.Data
	}
	for n, v := range w.Params {
		r.Params[n] = []Value{v}
	}
	if w.GridPoints != nil {
		n := *w.GridPoints
		if n < 1 || n > 4096 {
			t.Fatalf("witness grid_points %d", n)
		}
		if _, taken := w.Params["zz_points"]; taken {
			t.Fatal("zz_points is a witness param")
		}
		for i := range n {
			r.Params["zz_points"] = append(r.Params["zz_points"], Num(float64(i)))
		}
		if r.Points() != n {
			t.Fatalf("request spans %d points, witness %d", r.Points(), n)
		}
	}
	facts := w.Facts
	r.Facts = func() (map[string]Value, error) {
		if facts == nil {
			return nil, fmt.Errorf("the witness gives no facts")
		}
		return facts, nil
	}
	return r
}

// diffRecheck decides the witness with Check against both sets: admitted
// by the set the result names, refused by the other's RefusedBy exactly.
func diffRecheck(t *testing.T, k *Checker, res DiffResult, old, new []*Compiled) {
	t.Helper()
	if res.Witness == nil {
		t.Fatalf("no witness: %+v", res)
	}
	req := diffRequest(t, res.Witness)
	verdict := func(cs []*Compiled) []string {
		var gov []*Compiled
		for _, c := range cs {
			if c.AppliesTo(req.Family, req.Metric) {
				gov = append(gov, c)
			}
		}
		refs, err := k.Check(context.Background(), gov, req)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		names := []string{}
		for _, r := range refs {
			if r.Reason == ReasonUndecided {
				t.Fatalf("Check undecided: %+v", r)
			}
			names = append(names, r.Policy)
		}
		return names
	}
	yes, no := new, old
	switch res.AdmittedBy {
	case "old":
		yes, no = old, new
	case "new":
	default:
		t.Fatalf("admitted_by %q", res.AdmittedBy)
	}
	if got := verdict(yes); len(got) > 0 {
		t.Errorf("the admitting set (%s) refuses the witness: %v", res.AdmittedBy, got)
	}
	got := verdict(no)
	if len(got) == 0 {
		t.Errorf("the other set admits the witness too")
	}
	if !slices.Equal(got, res.RefusedBy) {
		t.Errorf("refused by %v, the result says %v", got, res.RefusedBy)
	}
	// Only the fields some policy binds, family and metric aside.
	bound := map[string]bool{}
	for _, c := range slices.Concat(old, new) {
		for _, p := range c.Pointers() {
			bound[p.Text] = true
		}
	}
	for n := range res.Witness.Params {
		if !bound["/params/"+n] {
			t.Errorf("witness param %s: no policy binds it", n)
		}
	}
	for n := range res.Witness.Facts {
		if !bound["/facts/data/"+n] {
			t.Errorf("witness fact %s: no policy binds it", n)
		}
	}
	if (res.Witness.Data != nil) != bound["/data"] || (res.Witness.GridPoints != nil) != bound["/grid/points"] {
		t.Errorf("witness data/grid_points given iff bound: %+v", res.Witness)
	}
}

func TestDiff(t *testing.T) {
	shipped := lintLoad(t, "testdata/trading.json")
	renamed := diffVariant(t, `"grid_size_cap"`, `"grid_points_cap"`)
	rewritten := diffVariant(t, `(<= leverage 2.0)`, `(not (< 2.0 leverage))`, `(>= risk_window 20)`, `(> risk_window 19)`)
	lev25 := diffVariant(t, `(<= leverage 2.0)`, `(<= leverage 2.5)`)
	grid512 := diffVariant(t, `(<= points 256)`, `(<= points 512)`)
	noCarry := diffVariant(t, "\"MOM_REV\",\n      \"CARRY\"", `"MOM_REV"`)
	realWindow := diffVariant(t, `(declare-const window Int)`, `(declare-const window Real)`, `(>= (* 4 risk_window) window)`, `(>= (to_real (* 4 risk_window)) window)`)
	var noEmbargo []*Compiled
	for _, c := range shipped {
		if c.Name != "holdout_embargo" {
			noEmbargo = append(noEmbargo, c)
		}
	}
	type check func(t *testing.T, res DiffResult)
	cases := []struct {
		name     string
		old, new []*Compiled
		// equivalent, or else admitted_by and refused_by
		equivalent bool
		admittedBy string
		refusedBy  []string
		witness    check
	}{
		{name: "identical", old: shipped, new: shipped, equivalent: true},
		{name: "renamed policy", old: shipped, new: renamed, equivalent: true},
		// Different ids, same meaning: equivalence is proved, not read off ids.
		{name: "rewritten rules", old: shipped, new: rewritten, equivalent: true},
		{name: "both empty", equivalent: true},
		{name: "commodity cap 2.0 → 2.5", old: shipped, new: lev25, admittedBy: "new", refusedBy: []string{"leverage_by_asset_class"},
			witness: func(t *testing.T, res DiffResult) {
				lev := res.Witness.Params["leverage"].Num
				if lev <= 2 || lev > 2.5 {
					t.Errorf("leverage %v, want in (2, 2.5]", lev)
				}
			}},
		{name: "commodity cap 2.5 → 2.0", old: lev25, new: shipped, admittedBy: "old", refusedBy: []string{"leverage_by_asset_class"}},
		{name: "grid cap 256 → 512", old: shipped, new: grid512, admittedBy: "new", refusedBy: []string{"grid_size_cap"},
			witness: func(t *testing.T, res DiffResult) {
				if n := *res.Witness.GridPoints; n <= 256 || n > 512 {
					t.Errorf("grid_points %d, want in (256, 512]", n)
				}
			}},
		{name: "embargo dropped", old: shipped, new: noEmbargo, admittedBy: "new", refusedBy: []string{"holdout_embargo"},
			witness: func(t *testing.T, res DiffResult) {
				if d := res.Witness.Facts["last_date"].Num; d <= 20250630 {
					t.Errorf("last_date %v, want after 20250630", d)
				}
			}},
		{name: "CARRY no longer governed", old: shipped, new: noCarry, admittedBy: "new", refusedBy: []string{"risk_lookback"},
			witness: func(t *testing.T, res DiffResult) {
				if *res.Witness.Family != "CARRY" && *res.Witness.Metric != "CARRY" {
					t.Errorf("family %q metric %q, want CARRY", *res.Witness.Family, *res.Witness.Metric)
				}
			}},
		// An Int binding refuses a fractional window the Real one admits.
		{name: "window Int → Real", old: shipped, new: realWindow, admittedBy: "new", refusedBy: []string{"risk_lookback"}},
		{name: "everything → nothing", old: shipped, new: nil, admittedBy: "new", refusedBy: nil},
	}
	for _, sv := range lintSolvers(t) {
		k := lintChecker(t, sv, 0)
		for _, tc := range cases {
			t.Run(string(sv.Kind)+"/"+tc.name, func(t *testing.T) {
				start := time.Now()
				res, err := k.Diff(context.Background(), tc.old, tc.new)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(res)
				t.Logf("%s: %s", time.Since(start), b)
				if res.Undecided != "" {
					t.Fatalf("undecided: %s", res.Undecided)
				}
				if tc.equivalent {
					if !reflect.DeepEqual(res, DiffResult{Equivalent: true}) {
						t.Errorf("got %s, want equivalent", b)
					}
					return
				}
				if res.Equivalent || res.AdmittedBy != tc.admittedBy {
					t.Fatalf("got %s, want admitted by %s", b, tc.admittedBy)
				}
				if tc.refusedBy != nil && !slices.Equal(res.RefusedBy, tc.refusedBy) {
					t.Errorf("refused_by %v, want %v", res.RefusedBy, tc.refusedBy)
				}
				diffRecheck(t, k, res, tc.old, tc.new)
				if tc.witness != nil {
					tc.witness(t, res)
				}
			})
		}
	}
}

// A diff the solver cannot decide comes back promptly as undecided.
func TestDiffUndecided(t *testing.T) {
	hostile := lintParse(t, "cubes", hostilePolicy)
	// Admits nothing: a difference is a request cubes admits.
	never := lintParse(t, "cubes", strings.Replace(hostilePolicy, `(assert (=> cubes allow))`, `(assert (not allow))`, 1))
	for _, sv := range lintSolvers(t) {
		t.Run(string(sv.Kind), func(t *testing.T) {
			k := lintChecker(t, sv, 50*time.Millisecond)
			start := time.Now()
			res, err := k.Diff(context.Background(), []*Compiled{hostile}, []*Compiled{never})
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("Diff: %v", err)
			}
			t.Logf("%s: %+v", elapsed, res)
			if res.Equivalent || res.Undecided == "" || res.AdmittedBy != "" {
				t.Errorf("got %+v, want undecided", res)
			}
			if elapsed > 5*time.Second {
				t.Errorf("Diff took %s", elapsed)
			}
		})
	}
}

func TestDiffResultJSON(t *testing.T) {
	fam, n := "MOM_WZS", 300
	res := DiffResult{Witness: &Witness{Family: &fam, Params: map[string]Value{"leverage": Num(2.25)}, GridPoints: &n,
		Facts: map[string]Value{"last_date": Num(20250701)}}, AdmittedBy: "new", RefusedBy: []string{"grid_size_cap"}}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"equivalent":false,"witness":{"family":"MOM_WZS","params":{"leverage":2.25},"grid_points":300,"facts":{"last_date":20250701}},"admitted_by":"new","refused_by":["grid_size_cap"]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if b, _ := json.Marshal(DiffResult{Equivalent: true}); string(b) != `{"equivalent":true}` {
		t.Errorf("equivalent: %s", b)
	}
	// Witness.Request spans the grid with a param no policy binds.
	req := res.Witness.Request()
	if req.Points() != 300 || len(req.Params["leverage"]) != 1 || req.Family != "MOM_WZS" {
		t.Errorf("Request: %+v", req)
	}
}

func TestParseValue(t *testing.T) {
	rat := func(s string) float64 {
		r, _ := new(big.Rat).SetString(s)
		f, _ := r.Float64()
		return f
	}
	cases := []struct {
		text, sort string
		want       Value
	}{
		{"5", "Int", Num(5)},
		{"(- 5)", "Int", Num(-5)},
		{"2.0", "Real", Num(2)},
		{"(/ 5 2)", "Real", Num(2.5)},
		{"(- (/ 1 3))", "Real", Num(-rat("1/3"))},
		{"(/ 5.0 2.0)", "Real", Num(2.5)}, // z3
		{"(/ 2000001 1000000)", "Real", Num(2.000001)},
		{"(- 2.5)", "Real", Num(-2.5)},
		{`"oil-spot/"`, "String", Str("oil-spot/")},
		{`"a""b"`, "String", Str(`a"b`)},
		{`"caf\u{e9} \u{1F600}\u00e9"`, "String", Str("café 😀é")},
		{`"\u{5c}u{41}"`, "String", Str(`\u{41}`)}, // cvc5 escapes '\'
		{`"a\b"`, "String", Str(`a\b`)},            // a '\' that starts no escape is itself
		{`""`, "String", Str("")},
		{"true", "Bool", Boolean(true)},
		{"false", "Bool", Boolean(false)},
	}
	for _, tc := range cases {
		got, err := parseValue(tc.text, tc.sort)
		if err != nil || got != tc.want {
			t.Errorf("parseValue(%s, %s) = %v, %v; want %v", tc.text, tc.sort, got, err, tc.want)
		}
	}
	for _, bad := range []struct{ text, sort string }{
		{"(/ 1 0)", "Real"}, {"(+ 1 2)", "Int"}, {"x", "Int"}, {"abc", "String"}, {`"x`, "String"}, {"1", "Bool"}, {"(- x)", "Real"},
	} {
		if v, err := parseValue(bad.text, bad.sort); err == nil {
			t.Errorf("parseValue(%s, %s) = %v, want an error", bad.text, bad.sort, v)
		}
	}
}

// The plain witness round-trips exactly: what the solver printed is what
// Check writes back (no float rounding, no escapes).
func TestDiffWitnessExact(t *testing.T) {
	for _, sv := range lintSolvers(t) {
		t.Run(string(sv.Kind), func(t *testing.T) {
			k := lintChecker(t, sv, 0)
			// Admits exactly one leverage, a third of a tenth off a
			// plain decimal: no plain witness, so the solver's own value
			// must be read and rounded — and the check then disagrees.
			third := lintParse(t, "third", `{"smtlib": "(declare-const l Real)\n(define-fun allow () Bool (= (* 3.0 l) 1.0))\n(assert (! allow :named a_third))\n",
				"bind": {"l": "/params/leverage"}, "allow": "allow", "applies_to": ["family"]}`)
			never := lintParse(t, "never", `{"smtlib": "(declare-const l Real)\n(define-fun allow () Bool false)\n",
				"bind": {"l": "/params/leverage"}, "allow": "allow", "applies_to": ["family"]}`)
			res, err := k.Diff(context.Background(), []*Compiled{third}, []*Compiled{never})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", res)
			// 1/3 is no float64: no request admits it, Check agrees, and
			// the sets admit exactly the same requests. The solver cannot
			// see that (it reasons over the rationals), so the answer must
			// be undecided — never a witness Check would contradict.
			if res.Equivalent || res.Undecided == "" || res.AdmittedBy != "" {
				t.Errorf("got %+v, want undecided", res)
			}
		})
	}
}
