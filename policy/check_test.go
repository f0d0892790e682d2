package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/groundgate/groundgate/policy/smt"
	"github.com/groundgate/groundgate/registry"
)

// solverKinds: every check test runs on both solvers.
var solverKinds = []string{"z3", "cvc5"}

// chkPolicy compiles a policy that governs every family.
func chkPolicy(t *testing.T, name, smtlib string, bind map[string]string, allow string) *Compiled {
	t.Helper()
	c, err := Compile(name, Policy{SMTLIB: smtlib, Bind: bind, Allow: allow, AppliesTo: []string{"family"}})
	if err != nil {
		t.Fatalf("Compile(%s): %v", name, err)
	}
	return c
}

// chkShipped reads the shipped trading set, by name.
func chkShipped(t testing.TB) map[string]*Compiled {
	t.Helper()
	raw, err := os.ReadFile("testdata/trading.json")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := ParseFile("trading.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*Compiled{}
	for _, c := range cs {
		out[c.Name] = c
	}
	return out
}

func chkCheck(t *testing.T, k *Checker, cs []*Compiled, req Request) []Refusal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := k.Check(ctx, cs, req)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rs
}

// params builds request parameters: each value a number, a string or a
// list of them (a grid axis).
func params(kv ...any) map[string][]Value {
	out := map[string][]Value{}
	for i := 0; i < len(kv); i += 2 {
		var vs []Value
		switch v := kv[i+1].(type) {
		case []float64:
			for _, f := range v {
				vs = append(vs, Num(f))
			}
		case []string:
			for _, s := range v {
				vs = append(vs, Str(s))
			}
		case float64:
			vs = []Value{Num(v)}
		case int:
			vs = []Value{Num(float64(v))}
		case string:
			vs = []Value{Str(v)}
		default:
			panic(fmt.Sprintf("params: %T", v))
		}
		out[kv[i].(string)] = vs
	}
	return out
}

func facts(kv ...any) func() (map[string]Value, error) {
	m := map[string]Value{}
	for i := 0; i < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case string:
			m[kv[i].(string)] = Str(v)
		case int:
			m[kv[i].(string)] = Num(float64(v))
		case bool:
			m[kv[i].(string)] = Boolean(v)
		}
	}
	return func() (map[string]Value, error) { return m, nil }
}

// budgetPolicy: a window costs twice its length out of a budget no
// pointer binds and that is at most 100, so windows above 50 break two
// rules together; the other rules each break alone.
const budgetPolicy = `
(declare-const window Int)
(declare-const lag Int)
(declare-const leverage Real)
(declare-const budget Int)
(declare-const allow Bool)
(assert (! (<= budget 100) :named budget_cap))
(assert (! (=> allow (<= (* 2 window) budget)) :named window_within_budget))
(assert (! (=> allow (>= lag 1)) :named lag_positive))
(assert (! (=> allow (<= leverage 2.0)) :named leverage_cap))
(assert (! (=> allow (>= leverage 0.0)) :named leverage_not_negative))
(assert (=> (and (<= (* 2 window) 100) (>= lag 1) (<= leverage 2.0) (>= leverage 0.0)) allow))
`

// Unsat cores name exactly the assertions that conflict, on cases whose
// answer is known: one rule; two rules that only conflict together; two
// independent violations (a minimal core is either one, never both);
// rules that hold never appear.
func TestCoreKnownAnswers(t *testing.T) {
	budget := chkPolicy(t, "budget", budgetPolicy, map[string]string{"window": "/params/window", "lag": "/params/lag", "leverage": "/params/leverage"}, "allow")
	paper := chkPolicy(t, "paper", `
		(declare-const leverage Real) (declare-const lag Int)
		(define-fun allow () Bool true)
		(assert (! (<= leverage 2.0) :named cap))
		(assert (! (>= lag 1) :named lag_positive))`, map[string]string{"leverage": "/params/leverage", "lag": "/params/lag"}, "allow")
	signOff := chkPolicy(t, "sign_off", `
		(declare-const leverage Real) (declare-const signed_off Bool) (declare-const allow Bool)
		(assert (! (=> allow (or (<= leverage 1.5) signed_off)) :named needs_sign_off))
		(assert (=> (<= leverage 1.5) allow))`, map[string]string{"leverage": "/params/leverage"}, "allow")
	headroom := chkPolicy(t, "headroom", `(declare-const tv Real) (declare-const allow Bool)
		(assert (! (=> allow (<= (+ tv 0.2) 0.3)) :named headroom)) (assert (=> (<= (+ tv 0.2) 0.3) allow))`, map[string]string{"tv": "/params/target_vol"}, "allow")
	shipped := chkShipped(t)
	crude := "eia-nymex-futures/crude-oil-wti-cushing.csv"
	ok := facts("last_date", 20220215)

	cases := []struct {
		name   string
		policy *Compiled
		req    Request
		reason string     // "" admitted
		cores  [][]string // the cores a solver may rightly give
	}{
		{"at every cap exactly", budget, Request{Params: params("window", 50, "lag", 1, "leverage", 2.0)}, "", nil},
		{"one rule", budget, Request{Params: params("window", 10, "lag", 1, "leverage", 2.5)}, ReasonViolated, [][]string{{"leverage_cap"}}},
		{"another rule", budget, Request{Params: params("window", 10, "lag", 0, "leverage", 1.0)}, ReasonViolated, [][]string{{"lag_positive"}}},
		{"negative leverage", budget, Request{Params: params("window", 10, "lag", 1, "leverage", -0.5)}, ReasonViolated, [][]string{{"leverage_not_negative"}}},
		{"two rules only together", budget, Request{Params: params("window", 51, "lag", 1, "leverage", 1.0)}, ReasonViolated,
			[][]string{{"budget_cap", "window_within_budget"}}},
		{"two independent violations", budget, Request{Params: params("window", 10, "lag", 0, "leverage", 2.5)}, ReasonViolated,
			[][]string{{"lag_positive"}, {"leverage_cap"}}},
		{"a pair and a single", budget, Request{Params: params("window", 60, "lag", 0, "leverage", 1.0)}, ReasonViolated,
			[][]string{{"lag_positive"}, {"budget_cap", "window_within_budget"}}},
		{"paper style admits", paper, Request{Params: params("leverage", 2.0, "lag", 1)}, "", nil},
		{"paper style contradiction refuses", paper, Request{Params: params("leverage", 2.5, "lag", 1)}, ReasonViolated, [][]string{{"cap"}}},
		{"paper style two broken", paper, Request{Params: params("leverage", 2.5, "lag", 0)}, ReasonViolated, [][]string{{"cap"}, {"lag_positive"}}},
		{"unbound sign-off admits low leverage", signOff, Request{Params: params("leverage", 1.5)}, "", nil},
		{"unbound sign-off: satisfiable, not entailed", signOff, Request{Params: params("leverage", 1.75)}, ReasonUndetermined, [][]string{{}}},

		// The shipped set, each policy with a worked refusal.
		{"shipped leverage", shipped["leverage_by_asset_class"], Request{Data: crude, Params: params("leverage", 2.5)}, ReasonViolated,
			[][]string{{"commodity_leverage_at_most_2"}}},
		{"shipped leverage fx", shipped["leverage_by_asset_class"], Request{Data: "fx-fed-h10/daily.csv", Params: params("leverage", 3.0)}, "", nil},
		{"shipped grid size", shipped["grid_size_cap"], Request{Params: params("window", []float64{5, 10, 20, 40, 60, 80, 100, 120, 160, 200, 250, 300, 400, 500, 600, 700, 800},
			"risk_window", []float64{20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170})}, ReasonViolated,
			[][]string{{"at_most_256_grid_points"}}},
		{"shipped grid size at the cap", shipped["grid_size_cap"], Request{Params: params("window", seq(16), "risk_window", seq(16))}, "", nil},
		{"shipped grid size one over", shipped["grid_size_cap"], Request{Params: params("window", seq(257))}, ReasonViolated,
			[][]string{{"at_most_256_grid_points"}}},
		{"exact decimals: 0.1 + 0.2 <= 0.3", headroom, Request{Params: params("target_vol", 0.1)}, "", nil},
		{"exact decimals: just over", headroom, Request{Params: params("target_vol", 0.1000001)}, ReasonViolated, [][]string{{"headroom"}}},
		{"shipped risk look-back", shipped["risk_lookback"], Request{Params: params("window", 100, "risk_window", 20)}, ReasonViolated,
			[][]string{{"risk_window_at_least_quarter_window"}}},
		{"shipped vendor data", shipped["vendor_data_licence"], Request{Data: "equity-stocks-ffn/test_data.csv"}, ReasonViolated,
			[][]string{{"no_vendor_equity_prices"}}},
		{"shipped embargo", shipped["holdout_embargo"], Request{Data: crude, Facts: facts("last_date", 20250701)}, ReasonViolated,
			[][]string{{"no_data_after_2025_06_30"}}},
		{"shipped embargo at the date", shipped["holdout_embargo"], Request{Data: crude, Facts: facts("last_date", 20250630)}, "", nil},
		{"shipped embargo data admitted", shipped["holdout_embargo"], Request{Data: crude, Facts: ok}, "", nil},
	}
	pools := corpusPools(t)
	for _, kind := range solverKinds {
		k := NewChecker(pools[kind], 10*time.Second)
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				rs := chkCheck(t, k, []*Compiled{tc.policy}, tc.req)
				if tc.reason == "" {
					if len(rs) != 0 {
						t.Fatalf("refused: %+v", rs)
					}
					return
				}
				if len(rs) != 1 {
					t.Fatalf("got %+v, want one refusal", rs)
				}
				r := rs[0]
				if r.Policy != tc.policy.Name || r.Reason != tc.reason {
					t.Fatalf("got %s %s (%s), want %s %s", r.Policy, r.Reason, r.Detail, tc.policy.Name, tc.reason)
				}
				if !slices.ContainsFunc(tc.cores, func(c []string) bool { return slices.Equal(c, r.Core) }) {
					t.Fatalf("core %q, want one of %q (detail: %s)", r.Core, tc.cores, r.Detail)
				}
				for _, n := range r.Core {
					if !strings.Contains(r.Detail, n) {
						t.Errorf("detail %q does not name core rule %s", r.Detail, n)
					}
				}
				t.Logf("core %v: %s", r.Core, r.Detail)
			})
		}
	}
}

// A grid refusal names a real violating grid point: that point alone is
// refused; removing its value from the grid, again and again, ends in an
// admitted grid after removing exactly the violating values.
func TestWitnessIsRealGridPoint(t *testing.T) {
	shipped := chkShipped(t)
	crude := "eia-nymex-futures/crude-oil-wti-cushing.csv"
	pools := corpusPools(t)
	for _, kind := range solverKinds {
		k := NewChecker(pools[kind], 10*time.Second)

		t.Run(kind+"/one axis", func(t *testing.T) {
			lev := shipped["leverage_by_asset_class"]
			var grid []float64
			for i := 1; i <= 12; i++ {
				grid = append(grid, float64(i)*0.25)
			}
			var removed []float64
			for round := 0; ; round++ {
				if round > 12 {
					t.Fatalf("not admitted after removing %v", removed)
				}
				rs := chkCheck(t, k, []*Compiled{lev}, Request{Data: crude, Params: params("leverage", grid)})
				if len(rs) == 0 {
					break
				}
				w := witnessValue(t, rs[0], "leverage")
				if !slices.Contains(grid, w.Num) {
					t.Fatalf("witness leverage %v is not in the grid %v", w, grid)
				}
				alone := chkCheck(t, k, []*Compiled{lev}, Request{Data: crude, Params: params("leverage", w.Num)})
				if len(alone) != 1 || alone[0].Reason != rs[0].Reason || !slices.Equal(alone[0].Core, rs[0].Core) {
					t.Fatalf("witness leverage=%v alone: %+v; the grid's refusal was %+v", w, alone, rs[0])
				}
				grid = slices.DeleteFunc(grid, func(f float64) bool { return f == w.Num })
				removed = append(removed, w.Num)
			}
			slices.Sort(removed)
			if want := []float64{2.25, 2.5, 2.75, 3}; !slices.Equal(removed, want) {
				t.Fatalf("removed %v, want exactly the leverages above 2: %v", removed, want)
			}
		})

		t.Run(kind+"/two axes", func(t *testing.T) {
			rl := shipped["risk_lookback"]
			windows := []float64{20, 40, 60, 80, 100, 120}
			risks := []float64{10, 15, 20, 25, 30}
			violates := func(w, r float64) bool { return 4*r < w || r < 20 }
			for round := 0; ; round++ {
				if round > 11 {
					t.Fatalf("not admitted: windows %v risk windows %v", windows, risks)
				}
				rs := chkCheck(t, k, []*Compiled{rl}, Request{Params: params("window", windows, "risk_window", risks)})
				if len(rs) == 0 {
					break
				}
				w, r := witnessValue(t, rs[0], "window").Num, witnessValue(t, rs[0], "risk_window").Num
				if !slices.Contains(windows, w) || !slices.Contains(risks, r) || !violates(w, r) {
					t.Fatalf("witness window=%v risk_window=%v: not a violating point of the grid %v × %v", w, r, windows, risks)
				}
				alone := chkCheck(t, k, []*Compiled{rl}, Request{Params: params("window", w, "risk_window", r)})
				if len(alone) != 1 || alone[0].Reason != ReasonViolated {
					t.Fatalf("witness alone: %+v", alone)
				}
				if r < 20 {
					risks = slices.DeleteFunc(risks, func(f float64) bool { return f == r })
				} else {
					windows = slices.DeleteFunc(windows, func(f float64) bool { return f == w })
				}
			}
			for _, w := range windows {
				for _, r := range risks {
					if violates(w, r) {
						t.Fatalf("admitted a grid with the violating point window=%v risk_window=%v", w, r)
					}
				}
			}
			if !slices.Equal(risks, []float64{20, 25, 30}) || !slices.Equal(windows, []float64{20, 40, 60, 80}) {
				t.Fatalf("admitted windows %v risk windows %v, want [20 40 60 80] × [20 25 30]", windows, risks)
			}
		})
	}
}

// seq is 1, 2, …, n.
func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

func witnessValue(t *testing.T, r Refusal, c string) Value {
	t.Helper()
	for _, a := range r.Witness {
		if a.Const == c {
			return a.Value
		}
	}
	t.Fatalf("refusal %+v has no witness value for %s", r, c)
	return Value{}
}

// Policies the compiler refuses, each with the field and the words that
// say what is wrong.
func TestCompileRefuses(t *testing.T) {
	base := map[string]string{"lev": "/params/leverage"}
	cases := []struct {
		name, smtlib string
		bind         map[string]string
		allow        string
		field, want  string
	}{
		{"malformed", "(declare-const lev Real)\n(assert (<= lev 2.0)", base, "allow", "smtlib", "2:"},
		{"unbalanced", "(declare-const lev Real))", base, "allow", "smtlib", "1:"},
		{"a solver command", "(declare-const lev Real) (declare-const allow Bool) (check-sat)", base, "allow", "smtlib", `"check-sat" is not allowed`},
		{"allow Int", "(declare-const lev Real) (declare-const allow Int)", base, "allow", "allow", "allow is declared Int"},
		{"allow undeclared", "(declare-const lev Real)", base, "allow", "allow", "not declared as a Bool constant"},
		{"allow with arguments", "(declare-const lev Real) (define-fun allow ((x Int)) Bool true)", base, "allow", "allow", "not declared as a Bool constant"},
		{"allow Int-valued define-fun", "(declare-const lev Real) (define-fun allow () Int 1)", base, "allow", "allow", "not declared as a Bool constant"},
		{"allow not a symbol", "(declare-const lev Real) (declare-const allow Bool)", base, "(not allow)", "allow", "not an SMT-LIB symbol"},
		{"bind undeclared", "(declare-const allow Bool)", base, "allow", "bind.lev", "lev is not declared"},
		{"bind allow", "(declare-const lev Real) (declare-const allow Bool)", map[string]string{"lev": "/params/leverage", "allow": "/params/ok"}, "allow", "bind.allow", "cannot be bound"},
		{"pointer without slash", "(declare-const lev Real) (declare-const allow Bool)", map[string]string{"lev": "params/leverage"}, "allow", "bind.lev", "not a JSON pointer"},
		{"pointer to nothing", "(declare-const lev Real) (declare-const allow Bool)", map[string]string{"lev": "/foo"}, "allow", "bind.lev", "points to no field"},
		{"pointer too deep", "(declare-const lev Real) (declare-const allow Bool)", map[string]string{"lev": "/params/a/b"}, "allow", "bind.lev", "points to no field"},
		{"unknown fact", "(declare-const lev Real) (declare-const allow Bool)", map[string]string{"lev": "/facts/data/colour"}, "allow", "bind.lev", "points to no field"},
		{"grid points as Real", "(declare-const lev Real) (declare-const allow Bool)", map[string]string{"lev": "/grid/points"}, "allow", "bind.lev", "/grid/points holds Int"},
		{"date fact as String", "(declare-const lev String) (declare-const allow Bool)", map[string]string{"lev": "/facts/data/last_date"}, "allow", "bind.lev", "holds Int"},
		{"helper reads an unbound constant", "(declare-const lev Real) (declare-const x Int) (declare-const allow Bool) (define-fun h () Bool (> x 1))", base, "allow", "smtlib", "reads x"},
		// Found by review: each was accepted, then admitted what it should refuse or failed every check.
		{"a let variable with the reserved prefix", "(declare-const lev Real) (declare-const allow Bool) (assert (! (= allow (let ((gg.p0.lev 1.0)) (<= lev 10.0))) :named cap))", base, "allow", "smtlib", `"gg." are reserved`},
		{"raw non-ASCII in a string literal", "(declare-const lev Real) (declare-const d String) (declare-const allow Bool) (assert (= allow (not (= d \"café.csv\"))))", base, "allow", "smtlib", "non-ASCII"},
		{"an assertion named like a constant", "(declare-const lev Real) (declare-const allow Bool) (assert (! (= allow (<= lev 10.0)) :named lev))", base, "allow", "smtlib", "also a declared"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile("p", Policy{SMTLIB: tc.smtlib, Bind: tc.bind, Allow: tc.allow, AppliesTo: []string{"family"}})
			var ve *ValidationError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &ve) {
				t.Fatalf("got %v, want a *ValidationError", err)
			}
			found := slices.ContainsFunc(ve.Fields, func(f registry.FieldError) bool { return f.Field == tc.field && strings.Contains(f.Problem, tc.want) })
			if !found {
				t.Fatalf("got %v, want field %s saying %q", err, tc.field, tc.want)
			}
		})
	}
}

// Requests a policy cannot decide: refused with the reason, never admitted.
func TestCheckBadRequests(t *testing.T) {
	pools := corpusPools(t)
	intPolicy := chkPolicy(t, "window_cap", `(declare-const w Int) (declare-const allow Bool)
		(assert (! (=> allow (<= w 100)) :named cap)) (assert (=> (<= w 100) allow))`, map[string]string{"w": "/params/window"}, "allow")
	realPolicy := chkPolicy(t, "lev_cap", `(declare-const lev Real) (declare-const allow Bool)
		(assert (! (=> allow (<= lev 2.0)) :named cap)) (assert (=> (<= lev 2.0) allow))`, map[string]string{"lev": "/params/leverage"}, "allow")
	strPolicy := chkPolicy(t, "front_c1", `(declare-const f String) (declare-const allow Bool)
		(assert (! (=> allow (= f "C1")) :named c1)) (assert (=> (= f "C1") allow))`, map[string]string{"f": "/params/front"}, "allow")
	nope := chkPolicy(t, "nope", `(declare-const n Int) (declare-const allow Bool) (assert (= allow (> n 0)))`, map[string]string{"n": "/params/nope"}, "allow")
	second := chkPolicy(t, "second", `(declare-const s Real) (declare-const allow Bool)
		(assert (! (=> allow (<= s 2.0)) :named second_cap)) (assert (=> (<= s 2.0) allow))`, map[string]string{"s": "/params/second"}, "allow")
	embargo := chkShipped(t)["holdout_embargo"]
	failing := func() (map[string]Value, error) { return nil, errors.New("disk on fire") }
	cases := []struct {
		name    string
		policy  *Compiled
		req     Request
		reason  string
		witness *Value // the refused value
		detail  string
	}{
		{"missing parameter", nope, Request{Family: "MOM_WZS", Params: params("window", 20)}, ReasonMissing, nil, "params.nope"},
		{"default fills it", nope, Request{Family: "MOM_WZS", Defaults: map[string]Value{"nope": Num(3)}}, "", nil, ""},
		{"Real into Int", intPolicy, Request{Params: params("window", 2.5)}, ReasonType, &Value{Num: 2.5}, "not an integer"},
		{"string into Int", intPolicy, Request{Params: params("window", "20")}, ReasonType, &Value{Str: "20", IsStr: true}, "is a string"},
		{"one bad value in a grid", intPolicy, Request{Params: params("window", []float64{10, 20, 30.5, 40})}, ReasonType, &Value{Num: 30.5}, "not an integer"},
		{"huge Int", intPolicy, Request{Params: params("window", 1e300)}, ReasonType, &Value{Num: 1e300}, "not an integer"},
		{"string into Real", realPolicy, Request{Params: params("leverage", "abc")}, ReasonType, &Value{Str: "abc", IsStr: true}, "is a string"},
		{"number into String", strPolicy, Request{Params: params("front", 1)}, ReasonType, &Value{Num: 1}, "is a number"},
		{"no facts", embargo, Request{Data: "x.csv"}, ReasonMissing, nil, "facts"},
		{"facts fail", embargo, Request{Data: "x.csv", Facts: failing}, ReasonMissing, nil, "disk on fire"},
		{"fact absent", embargo, Request{Data: "x.csv", Facts: facts("rows", 10)}, ReasonMissing, nil, "no fact last_date"},
		{"fact of the wrong type", embargo, Request{Data: "x.csv", Facts: facts("last_date", "2025-01-01")}, ReasonType, &Value{Str: "2025-01-01", IsStr: true}, "is a string"},
	}
	for _, kind := range solverKinds {
		k := NewChecker(pools[kind], 10*time.Second)
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				// A second policy, violated, must still be decided beside
				// the one under test: one refusal never hides another.
				rs := chkCheck(t, k, []*Compiled{tc.policy, second}, withParam(tc.req, "second", 3.0))
				if len(rs) == 0 || rs[len(rs)-1].Policy != "second" || rs[len(rs)-1].Reason != ReasonViolated {
					t.Fatalf("got %+v, want the second policy violated", rs)
				}
				rs = rs[:len(rs)-1]
				if tc.reason == "" {
					if len(rs) != 0 {
						t.Fatalf("refused: %+v", rs)
					}
					return
				}
				if len(rs) != 1 || rs[0].Reason != tc.reason || len(rs[0].Core) != 0 || !strings.Contains(rs[0].Detail, tc.detail) {
					t.Fatalf("got %+v, want one %s refusal, no core, detail saying %q", rs, tc.reason, tc.detail)
				}
				if tc.witness != nil && (len(rs[0].Witness) != 1 || rs[0].Witness[0].Value != *tc.witness) {
					t.Fatalf("witness %+v, want the value %s", rs[0].Witness, tc.witness)
				}
			})
		}
	}
}

func withParam(req Request, name string, v float64) Request {
	ps := map[string][]Value{name: {Num(v)}}
	for k, vs := range req.Params {
		if k != name {
			ps[k] = vs
		}
	}
	req.Params = ps
	return req
}

// cubes: x³ + y³ + z³ = n has solutions for n = 33 only beyond 10^16: no
// solver decides it in time.
const cubesRule = `(assert (! (=> allow (= (+ (* x x x) (* y y y) (* z z z)) n)) :named three_cubes))`

// A solver that cannot decide in time refuses, promptly, and the pool
// stays usable.
func TestCheckTimeout(t *testing.T) {
	pools := corpusPools(t)
	// Paper style: the query asks whether some x, y, z make the rule hold.
	hard := chkPolicy(t, "cubes", `(declare-const n Int) (declare-const x Int) (declare-const y Int) (declare-const z Int)
		(define-fun allow () Bool true) `+cubesRule, map[string]string{"n": "/params/n"}, "allow")
	easy := chkShipped(t)["risk_lookback"]
	for _, kind := range solverKinds {
		t.Run(kind, func(t *testing.T) {
			k := NewChecker(pools[kind], 50*time.Millisecond)
			start := time.Now()
			rs, err := k.Check(context.Background(), []*Compiled{hard, easy}, Request{Params: params("n", 33, "window", 40, "risk_window", 20)})
			took := time.Since(start)
			if err != nil {
				t.Fatalf("Check: %v, want an undecided refusal", err)
			}
			if len(rs) == 0 || rs[0].Policy != "cubes" || rs[0].Reason != ReasonUndecided {
				t.Fatalf("got %+v, want cubes undecided", rs)
			}
			if took > 3*time.Second {
				t.Fatalf("a 50 ms timeout took %s", took)
			}
			t.Logf("%s in %s: %s", rs[0].Reason, took, rs[0].Detail)
			rs = chkCheck(t, NewChecker(pools[kind], 5*time.Second), []*Compiled{easy}, Request{Params: params("window", 40, "risk_window", 20)})
			if len(rs) != 0 {
				t.Fatalf("after the timeout: %+v", rs)
			}
		})
	}
}

// A solver killed mid-query: the check fails with ErrSolver (the caller
// refuses the request), never an empty list of refusals; the next check
// gets a fresh solver.
func TestCheckSolverCrash(t *testing.T) {
	pools := corpusPools(t)
	// allow declared: admitting needs x, y, z, which the solver searches
	// for until the (long) timeout.
	hard := chkPolicy(t, "cubes", `(declare-const n Int) (declare-const x Int) (declare-const y Int) (declare-const z Int)
		(declare-const allow Bool) `+cubesRule, map[string]string{"n": "/params/n"}, "allow")
	lev := chkShipped(t)["leverage_by_asset_class"]
	crude := "eia-nymex-futures/crude-oil-wti-cushing.csv"
	for _, kind := range solverKinds {
		t.Run(kind, func(t *testing.T) {
			k := NewChecker(pools[kind], time.Minute)
			chkCheck(t, k, []*Compiled{lev}, Request{Data: crude, Params: params("leverage", 1.0)}) // warm
			pids := solverChildren(t, kind)
			if len(pids) != 1 {
				t.Fatalf("want one %s process, got %v", kind, pids)
			}
			kill := time.AfterFunc(300*time.Millisecond, func() { _ = syscall.Kill(pids[0], syscall.SIGKILL) })
			defer kill.Stop()
			start := time.Now()
			rs, err := k.Check(context.Background(), []*Compiled{lev, hard}, Request{Data: crude, Params: params("leverage", 1.0, "n", 33)})
			if !errors.Is(err, ErrSolver) || rs != nil {
				t.Fatalf("got %+v, %v; want no verdict and ErrSolver", rs, err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("crash noticed after %s", took)
			}
			t.Logf("%s", err)
			if rs := chkCheck(t, k, []*Compiled{lev}, Request{Data: crude, Params: params("leverage", 1.0)}); len(rs) != 0 {
				t.Fatalf("after the crash, admitted request refused: %+v", rs)
			}
			rs = chkCheck(t, k, []*Compiled{lev}, Request{Data: crude, Params: params("leverage", 2.5)})
			if len(rs) != 1 || rs[0].Reason != ReasonViolated {
				t.Fatalf("after the crash, violating request: %+v", rs)
			}
			if after := solverChildren(t, kind); len(after) != 1 || after[0] == pids[0] {
				t.Fatalf("want one new %s process, got %v (was %v)", kind, after, pids)
			}
		})
	}
}

// solverChildren lists this test binary's child processes running the
// solver command.
func solverChildren(t *testing.T, command string) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	var pids []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:]) // state ppid …
		if len(fields) < 2 || fields[1] != me || s[open+1:end] != command || fields[0] == "Z" {
			continue
		}
		pid, _ := strconv.Atoi(strings.Fields(s)[0])
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}

// Validate has the solver read the policy: an ill-sorted term is refused
// at write time with the solver's words, in the author's names.
func TestValidateIllSorted(t *testing.T) {
	pools := corpusPools(t)
	cases := []struct {
		name, smtlib string
		want         map[string]string // solver → words the message must hold
	}{
		{"int plus string", `(declare-const lev Real) (declare-const allow Bool) (assert (! (=> allow (> lev (+ 1 "a"))) :named odd))`,
			map[string]string{"z3": "Sort mismatch", "cvc5": "arithmetic"}},
		{"unknown function", `(declare-const lev Real) (declare-const allow Bool) (assert (=> allow (frobnicate lev)))`,
			map[string]string{"z3": "frobnicate", "cvc5": "frobnicate"}},
		{"Bool compared with Real", `(declare-const lev Real) (declare-const allow Bool) (assert (=> allow (<= allow lev)))`,
			map[string]string{"z3": "Sort mismatch", "cvc5": "arithmetic"}},
	}
	for _, kind := range solverKinds {
		k := NewChecker(pools[kind], 5*time.Second)
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				c := chkPolicy(t, "odd", tc.smtlib, map[string]string{"lev": "/params/leverage"}, "allow")
				err := k.Validate(context.Background(), c)
				var ve *ValidationError
				if !errors.Is(err, ErrInvalid) || !errors.As(err, &ve) {
					t.Fatalf("got %v, want a *ValidationError", err)
				}
				msg := err.Error()
				if !strings.Contains(msg, tc.want[kind]) || !strings.Contains(msg, `policy "odd"`) || strings.Contains(msg, reserved) {
					t.Fatalf("message %q: want %q, the policy's name, and no checker-internal names", msg, tc.want[kind])
				}
				t.Log(msg)
			})
		}
		// A sound policy validates.
		if err := k.Validate(context.Background(), chkShipped(t)["leverage_by_asset_class"]); err != nil {
			t.Fatalf("%s: shipped policy: %v", kind, err)
		}
	}
}

// Refusal values are written back as the JSON numbers and strings they
// came from.
func TestWitnessJSON(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		want string
	}{{Num(0.1), "0.1"}, {Num(2), "2"}, {Num(-0.5), "-0.5"}, {Str(`C"1`), `"C\"1"`}, {Boolean(true), "true"},
		// Whole numbers as the integers they were written as, not 2.0250101e+07.
		{Num(20250101), "20250101"}, {Num(1e6), "1000000"}, {Num(math.MaxInt32), "2147483647"}} {
		b, err := tc.v.MarshalJSON()
		if err != nil || string(b) != tc.want {
			t.Errorf("%v: %s %v, want %s", tc.v, b, err, tc.want)
		}
	}
}

// Many policies binding one wide grid axis: the query names each axis's
// values once, so it stays within smt.MaxQueryBytes and is decided, not
// refused as undecided.
func TestWideGridManyPolicies(t *testing.T) {
	var cs []*Compiled
	for i := range MaxPolicies {
		c, err := Compile(fmt.Sprintf("cap%03d", i), Policy{
			SMTLIB: fmt.Sprintf("(declare-const lev Real)\n(define-fun allow () Bool true)\n(assert (! (<= lev %d.5) :named at_most))", 64+i),
			Bind:   map[string]string{"lev": "/params/leverage"}, Allow: "allow", AppliesTo: []string{"family"}})
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	var lev []Value
	for i := range 64 {
		lev = append(lev, Num(float64(i)+0.25))
	}
	pool := smt.NewPool(smt.Z3(), 1)
	defer pool.Close()
	// What is decided is the point, not how fast: the default 2 s per query
	// was not enough at a load average of 14 on 2 cores.
	const timeout = 30 * time.Second
	rs, err := NewChecker(pool, timeout).Check(context.Background(), cs, Request{Family: "F", Params: map[string][]Value{"leverage": lev}})
	if err != nil || len(rs) != 0 {
		t.Fatalf("every cap is above the grid: %v %+v", err, rs)
	}
	lev = append(lev[:63], Num(64.75)) // above cap000's 64.5 only
	rs, err = NewChecker(pool, timeout).Check(context.Background(), cs, Request{Family: "F", Params: map[string][]Value{"leverage": lev}})
	if err != nil || len(rs) != 1 || rs[0].Policy != "cap000" || rs[0].Reason != ReasonViolated {
		t.Fatalf("one cap below the grid's top: %v %+v", err, rs)
	}
}

// A check reads the same queries whether a policy's renamed text was made
// for it or kept from an earlier check, at any place in the set: the
// shipped set checked in one order and then reversed, by policies
// compiled afresh for each check and by the same ones checked again.
func TestRenamedTextKept(t *testing.T) {
	pools := corpusPools(t)
	reqs := benchShippedRequests()
	queries := func(cs []*Compiled, req Request) []string {
		rec := &benchRecorder{s: pools["z3"]}
		chkCheck(t, NewChecker(rec, 10*time.Second), cs, req)
		var out []string
		for _, q := range rec.qs {
			out = append(out, q.Commands+"\n"+q.Goal)
		}
		return out
	}
	ordered := func(m map[string]*Compiled, reverse bool) []*Compiled {
		var cs []*Compiled
		for _, name := range slices.Sorted(maps.Keys(m)) {
			cs = append(cs, m[name])
		}
		if reverse {
			slices.Reverse(cs)
		}
		return cs
	}
	kept := chkShipped(t)
	for _, name := range []string{"1-point", "64-point"} {
		refused := reqs[name]
		refused.Params = maps.Clone(refused.Params)
		refused.Params["leverage"] = []Value{Num(9)} // over every leverage cap
		for i, req := range []Request{reqs[name], refused} {
			for _, reverse := range []bool{false, true} {
				want := queries(ordered(chkShipped(t), reverse), req)
				if len(want) == 0 || i == 1 && len(want) < 3 {
					t.Fatalf("%s: %d queries recorded; an admission asks one, a refusal more", name, len(want))
				}
				for range 2 {
					if got := queries(ordered(kept, reverse), req); !slices.Equal(got, want) {
						t.Fatalf("%s (reversed %v): the kept text gave other queries than a fresh compile", name, reverse)
					}
				}
			}
		}
	}
}
