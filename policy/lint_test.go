package policy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/policy/smt"
)

// lintSolvers are the solvers every lint and diff test runs against. A
// missing one fails the test: bash scripts/test.sh installs both.
func lintSolvers(t *testing.T) []smt.Solver {
	t.Helper()
	svs := []smt.Solver{smt.Z3(), smt.CVC5()}
	for _, sv := range svs {
		if err := sv.Available(); err != nil {
			t.Fatalf("%v", err)
		}
	}
	return svs
}

// lintChecker is a checker on a one-process pool of sv, closed at cleanup.
// The generous timeout keeps a loaded machine from turning a verdict into
// "undecided"; the hostile tests set their own.
func lintChecker(t *testing.T, sv smt.Solver, timeout time.Duration) *Checker {
	t.Helper()
	pool := smt.NewPool(sv, 1)
	t.Cleanup(func() { pool.Close() })
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	return NewChecker(pool, timeout)
}

func lintLoad(t *testing.T, path string) []*Compiled {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := ParseFile(path, raw)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func lintParse(t *testing.T, name, raw string) *Compiled {
	t.Helper()
	p, err := Decode(name, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(name, p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rep builds an expected report; conflicts are compared by name (details
// are checked separately).
func rep(name string, mod func(r *LintReport)) LintReport {
	r := LintReport{Policy: name, Redundant: []string{}, Unbound: []string{}, Conflicts: []Conflict{}, Undecided: []string{}}
	if mod != nil {
		mod(&r)
	}
	r.Clean = !r.Vacuous && !r.Tautological && len(r.Redundant) == 0 && len(r.Unbound) == 0 && len(r.Conflicts) == 0 && len(r.Undecided) == 0
	return r
}

func with(names ...string) []Conflict {
	out := []Conflict{}
	for _, n := range names {
		out = append(out, Conflict{With: n})
	}
	return out
}

func TestLintSets(t *testing.T) {
	clean := func(names ...string) []LintReport {
		var out []LintReport
		for _, n := range names {
			out = append(out, rep(n, nil))
		}
		return out
	}
	cases := []struct {
		file string
		want []LintReport
		// words each conflict's detail must contain, by "policy→other"
		details map[string][]string
	}{
		{
			// One seeded defect per policy, and nothing else.
			file: "testdata/lint/seeded.json",
			want: []LintReport{
				rep("blocks_everything", func(r *LintReport) { r.Vacuous = true }),
				rep("blocks_nothing", func(r *LintReport) { r.Tautological = true }),
				rep("leverage_caps", func(r *LintReport) { r.Redundant = []string{"leverage_at_most_10"} }),
				// Conflicting only through the pointer they share: the
				// constants have different names.
				rep("long_lookback", func(r *LintReport) { r.Conflicts = with("short_lookback") }),
				rep("short_lookback", func(r *LintReport) { r.Conflicts = with("long_lookback") }),
			},
			details: map[string][]string{"long_lookback→short_lookback": {"MOM_WZS", "/params/window"}},
		},
		{
			// Disjoint applies_to (no conflict), a policy that reads the
			// family and metric (no pointer shared, yet a conflict with a
			// policy for CARRY), Int and Real bindings of
			// one pointer (linked: 3 passes both, nothing in (3, 3.5) is
			// whole), a String binding of a numeric field (a type clash), an
			// unbound constant.
			file: "testdata/lint/pairs.json",
			want: []LintReport{
				rep("carry_short", func(r *LintReport) { r.Conflicts = with("family_pin") }),
				rep("family_pin", func(r *LintReport) { r.Conflicts = with("carry_short") }),
				rep("fractional_band", func(r *LintReport) { r.Conflicts = with("leverage_label", "whole_leverage") }),
				rep("fractional_cap", func(r *LintReport) { r.Conflicts = with("leverage_label") }),
				rep("leverage_label", func(r *LintReport) {
					r.Conflicts = with("fractional_band", "fractional_cap", "whole_leverage")
				}),
				rep("long_window", nil),
				rep("scratch_constant", func(r *LintReport) { r.Unbound = []string{"note"} }),
				rep("whole_leverage", func(r *LintReport) { r.Conflicts = with("fractional_band", "leverage_label") }),
			},
			details: map[string][]string{
				"leverage_label→whole_leverage":  {"/params/leverage", "String", "Int"},
				"whole_leverage→fractional_band": {"/params/leverage"},
				"carry_short→family_pin":         {"for CARRY"},
			},
		},
		{
			file: "testdata/trading.json",
			want: clean("grid_size_cap", "holdout_embargo", "leverage_by_asset_class", "risk_lookback", "vendor_data_licence"),
		},
	}
	for _, sv := range lintSolvers(t) {
		k := lintChecker(t, sv, 0)
		for _, tc := range cases {
			t.Run(string(sv.Kind)+"/"+filepath.Base(tc.file), func(t *testing.T) {
				cs := lintLoad(t, tc.file)
				start := time.Now()
				got, err := k.LintSet(context.Background(), cs)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("LintSet: %d policies in %s", len(cs), time.Since(start))
				for i := range got {
					for j, c := range got[i].Conflicts {
						if c.Detail == "" {
							t.Errorf("%s: conflict with %s has no detail", got[i].Policy, c.With)
						}
						for _, w := range tc.details[got[i].Policy+"→"+c.With] {
							if !strings.Contains(c.Detail, w) {
								t.Errorf("%s: conflict detail %q does not mention %q", got[i].Policy, c.Detail, w)
							}
						}
						got[i].Conflicts[j].Detail = ""
					}
				}
				if !reflect.DeepEqual(got, tc.want) {
					g, _ := json.MarshalIndent(got, "", "  ")
					w, _ := json.MarshalIndent(tc.want, "", "  ")
					t.Errorf("LintSet:\n%s\nwant:\n%s", g, w)
				}
			})
		}
	}
}

// Lint of one policy against the others gives the same report as LintSet,
// and skips a policy of its own name (the version it would replace).
func TestLintOne(t *testing.T) {
	seeded := lintLoad(t, "testdata/lint/seeded.json")
	byName := map[string]*Compiled{}
	for _, c := range seeded {
		byName[c.Name] = c
	}
	// A stored version of long_lookback that conflicts with the new one;
	// the new version replaces it, so it must not count.
	stale := lintParse(t, "long_lookback", `{"smtlib": "(declare-const w Int)\n(define-fun allow () Bool (<= w 10))\n(assert (! allow :named window_at_most_10))\n",
		"bind": {"w": "/params/window"}, "allow": "allow", "applies_to": ["MOM_WZS"]}`)
	for _, sv := range lintSolvers(t) {
		k := lintChecker(t, sv, 0)
		t.Run(string(sv.Kind), func(t *testing.T) {
			cases := []struct {
				policy string
				others []*Compiled
				want   LintReport
			}{
				// blocks_everything is vacuous: reported as such, not as a
				// conflict with every policy.
				{"long_lookback", []*Compiled{stale, byName["short_lookback"], byName["blocks_everything"]},
					rep("long_lookback", func(r *LintReport) { r.Conflicts = with("short_lookback") })},
				{"short_lookback", []*Compiled{stale}, rep("short_lookback", nil)},
				{"leverage_caps", seeded, rep("leverage_caps", func(r *LintReport) { r.Redundant = []string{"leverage_at_most_10"} })},
				{"blocks_nothing", nil, rep("blocks_nothing", func(r *LintReport) { r.Tautological = true })},
			}
			for _, tc := range cases {
				got, err := k.Lint(context.Background(), byName[tc.policy], tc.others)
				if err != nil {
					t.Fatal(err)
				}
				for i := range got.Conflicts {
					got.Conflicts[i].Detail = ""
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("Lint(%s) = %+v, want %+v", tc.policy, got, tc.want)
				}
			}
			// The shipped policies, each against the rest: all clean.
			trading := lintLoad(t, "testdata/trading.json")
			for _, c := range trading {
				got, err := k.Lint(context.Background(), c, trading)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, rep(c.Name, nil)) {
					t.Errorf("Lint(%s) = %+v, want clean", c.Name, got)
				}
			}
		})
	}
}

// The report's JSON: the keys SPEC §10 pins, arrays never null.
func TestLintReportJSON(t *testing.T) {
	b, err := json.Marshal(rep("p", nil))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"policy":"p","vacuous":false,"tautological":false,"redundant":[],"unbound":[],"conflicts":[],"undecided":[],"clean":true}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
}

// hostilePolicy needs three cubes summing to 42 to admit anything: the
// solvers cannot decide that (the smallest solution is beyond 2^53, where
// the request's numbers end), so a lint or diff query about it is open.
const hostilePolicy = `{"smtlib": "(declare-const x Int)\n(declare-const y Int)\n(declare-const z Int)\n(declare-const allow Bool)\n(define-fun cubes () Bool (= (+ (* x x x) (* y y y) (* z z z)) 42))\n(assert (! (=> allow cubes) :named sum_of_cubes_is_42))\n(assert (=> cubes allow))\n",
	"bind": {"x": "/params/x", "y": "/params/y", "z": "/params/z"}, "allow": "allow", "applies_to": ["family"]}`

// A lint query the solver cannot decide in time comes back promptly as
// "undecided" — not an error, not a guess, not a hang — and leaves the
// pool working.
func TestLintUndecided(t *testing.T) {
	hostile := lintParse(t, "cubes", hostilePolicy)
	// Conflicts with cubes would need a request cubes admits: undecided too.
	partner := lintParse(t, "x_positive", `{"smtlib": "(declare-const x Int)\n(declare-const allow Bool)\n(assert (! (=> allow (> x 0)) :named x_positive))\n(assert (=> (> x 0) allow))\n",
		"bind": {"x": "/params/x"}, "allow": "allow", "applies_to": ["family"]}`)
	for _, sv := range lintSolvers(t) {
		t.Run(string(sv.Kind), func(t *testing.T) {
			k := lintChecker(t, sv, 50*time.Millisecond)
			start := time.Now()
			reps, err := k.LintSet(context.Background(), []*Compiled{hostile, partner})
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("LintSet: %v", err)
			}
			t.Logf("LintSet with a 50 ms timeout: %s, %+v", elapsed, reps)
			if elapsed > 5*time.Second {
				t.Errorf("LintSet took %s", elapsed)
			}
			r := reps[0]
			if r.Vacuous || r.Clean || !hasPrefix(r.Undecided, "vacuous: ") {
				t.Errorf("cubes: %+v, want vacuity undecided, not vacuous, not clean", r)
			}
			if len(reps[1].Conflicts) != 0 || !hasPrefix(reps[1].Undecided, "conflict with cubes: ") || reps[1].Clean {
				t.Errorf("x_positive: %+v, want the conflict with cubes undecided", reps[1])
			}
			// The pool still answers.
			k2 := NewChecker(k.solver, 10*time.Second)
			got, err := k2.Lint(context.Background(), partner, nil)
			if err != nil || !got.Clean {
				t.Errorf("after the timeouts: %+v, %v", got, err)
			}
		})
	}
}

func hasPrefix(xs []string, prefix string) bool {
	return slices.ContainsFunc(xs, func(x string) bool { return strings.HasPrefix(x, prefix) })
}

func TestExpandBool(t *testing.T) {
	cases := []struct{ in, want string }{
		{"(forall ((a Bool)) (or a b))", "(and (or false b) (or true b))"},
		{"(exists ((a Bool) (x Int)) (and a (> x 0)))", "(or (exists ((x Int)) (and false (> x 0))) (exists ((x Int)) (and true (> x 0))))"},
		// An inner binder of the same name: left alone.
		{"(forall ((a Bool)) (and a (exists ((a Int)) (> a 0))))", "(forall ((a Bool)) (and a (exists ((a Int)) (> a 0))))"},
		// Inner Bool quantifiers expand first; the outer then sees no rebinding.
		{"(forall ((a Bool)) (exists ((a Bool)) a))", "(and (or false true) (or false true))"},
		{"(and p q)", "(and p q)"},
	}
	for _, tc := range cases {
		if got := expandBool(tc.in); got != tc.want {
			t.Errorf("expandBool(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
