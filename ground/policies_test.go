package ground

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/policy/smt"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/registry/registrytest"
)

// lastDates stands in for the executor's data facts (execution imports
// this package; internal/app's tests run the real one end to end): the
// last dates of the bundled sources.
type lastDates map[string]float64

func (l lastDates) PolicyFacts(_ context.Context, path string) (map[string]policy.Value, hashing.Digest, error) {
	d, ok := l[path]
	if !ok {
		return nil, hashing.Digest{}, ErrNoData
	}
	return map[string]policy.Value{"last_date": policy.Num(d)}, hashing.SumBLAKE3([]byte(path)), nil
}

type policyRig struct {
	*rig
	policies *policy.Store
	pool     *smt.Pool
}

// newPolicyRig is a gate over the built-in catalog with the shipped
// trading policies in force, checked by a real z3.
func newPolicyRig(t *testing.T, solver smt.Solver) *policyRig {
	t.Helper()
	ctx := context.Background()
	s := registrytest.Seeded(t, filepath.Join(t.TempDir(), "g.db"), registry.Options{})
	d, err := discover.New(ctx, s, s.Engine(), discover.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := policy.OpenStore(ctx, s.Engine(), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../policy/testdata/trading.json")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := policy.ParseFile("trading.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if _, err := ps.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	pool := smt.NewPool(solver, 1)
	t.Cleanup(func() { pool.Close() })
	facts := lastDates{"eia-nymex-futures/crude-oil-wti-cushing.csv": 20220215, "oil-spot/wti-daily.csv": 20260818,
		"fx-fed-h10/daily.csv": 20171201, "equity-stocks-ffn/test_data.csv": 20140310}
	g, err := New(s, d, s.Engine(), WithPolicies(ps, policy.NewChecker(pool, 0), facts))
	if err != nil {
		t.Fatal(err)
	}
	keepsEntries(t, s.Current())
	return &policyRig{rig: &rig{store: s, disc: d, gate: g}, policies: ps, pool: pool}
}

func f11(out Outcome) []Failure {
	var fs []Failure
	for _, f := range out.Record.Decision.Failures {
		if f.Code == F11 {
			fs = append(fs, f)
		}
	}
	return fs
}

// A refusal names the policy, the core and a real violating grid point:
// that point alone is refused, the grid without it admitted.
func TestPolicyCheckF11(t *testing.T) {
	for _, sv := range []smt.Solver{smt.Z3(), smt.CVC5()} {
		t.Run(string(sv.Kind), func(t *testing.T) {
			r := newPolicyRig(t, sv)
			ev := r.discover(t, "momentum", "sharpe")
			const futures = "eia-nymex-futures/crude-oil-wti-cushing.csv"
			req := func(lev, data string) []byte {
				return []byte(`{"family":"MOM_WZS","metric":"SRP","params":{"window":[20,60],"leverage":` + lev + `},"data":"` + data + `"}`)
			}
			out := r.ground(t, req("[1, 1.5, 2.5]", futures), ev.ID)
			fs := f11(out)
			if out.Record.Decision.Admitted || len(fs) != 1 || len(out.Record.Decision.Failures) != 1 {
				t.Fatalf("want one F11 failure, got %+v", out.Record.Decision)
			}
			f := fs[0]
			if f.Policy != "leverage_by_asset_class" || !slices.Equal(f.Core, []string{"commodity_leverage_at_most_2"}) || f.Field != "params.leverage" {
				t.Fatalf("refusal %+v", f)
			}
			var lev policy.Value
			for _, w := range f.Witness {
				if w.Pointer == "/params/leverage" {
					lev = w.Value
				}
			}
			if lev.Num != 2.5 || !strings.HasPrefix(f.Detail, "F11 policy leverage_by_asset_class refuses params.leverage=2.5") {
				t.Fatalf("witness %+v, detail %q", f.Witness, f.Detail)
			}
			if out := r.ground(t, req("2.5", futures), ev.ID); len(f11(out)) != 1 {
				t.Fatalf("the witness point alone is admitted: %+v", out.Record.Decision)
			}
			out = r.ground(t, req("[1, 1.5]", futures), ev.ID)
			if !out.Record.Decision.Admitted {
				t.Fatalf("the grid without the witness is refused: %+v", out.Record.Decision)
			}
			if out.Record.Policies == nil || *out.Record.Policies != r.policies.Current().Digest {
				t.Errorf("record names policy set %s, in force %s", out.Record.Policies, r.policies.Current().Digest)
			}
			if out.Record.DataDigest == nil {
				t.Error("the embargo read the data's facts, but the record pins no data digest")
			}
			var names []string
			for _, c := range out.Record.Decision.Checks {
				names = append(names, c.Name)
			}
			if names[len(names)-1] != "policies" {
				t.Errorf("checks %v: policies is not in the chain", names)
			}

			// Several policies refuse at once, each with its own core.
			out = r.ground(t, []byte(`{"family":"MOM_WZS","metric":"SRP","params":{"window":400,"leverage":2},"data":"oil-spot/wti-daily.csv"}`), ev.ID)
			var got []string
			for _, f := range f11(out) {
				got = append(got, f.Policy+":"+strings.Join(f.Core, ","))
			}
			want := []string{"holdout_embargo:no_data_after_2025_06_30", "risk_lookback:risk_window_at_least_quarter_window"}
			if !slices.Equal(got, want) {
				t.Errorf("refusals %v, want %v", got, want)
			}
			// A source without facts is refused by the policy that reads them, not admitted.
			out = r.ground(t, req("1", "no/such.csv"), ev.ID)
			if fs := f11(out); len(fs) != 1 || fs[0].Policy != "holdout_embargo" || !strings.Contains(fs[0].Detail, "binds last_date") {
				t.Errorf("missing data: %+v", out.Record.Decision.Failures)
			}
		})
	}
}

// A rule put in force after a request was grounded applies to its
// execution: Load re-decides it against the set in force.
func TestPolicyInForceAtLoad(t *testing.T) {
	r := newPolicyRig(t, smt.Z3())
	ctx := context.Background()
	ev := r.discover(t, "momentum", "sharpe")
	out := r.ground(t, []byte(`{"family":"MOM_WZS","metric":"SRP","params":{"window":20,"leverage":1.5},"data":"eia-nymex-futures/crude-oil-wti-cushing.csv"}`), ev.ID)
	if !out.Record.Decision.Admitted {
		t.Fatalf("refused: %+v", out.Record.Decision.Failures)
	}
	if _, err := r.gate.Load(ctx, out.ID); err != nil {
		t.Fatal(err)
	}
	strict, err := policy.Compile("no_leverage", policy.Policy{
		SMTLIB: "(declare-const leverage Real)\n(define-fun allow () Bool true)\n(assert (! (<= leverage 1.0) :named unlevered))",
		Bind:   map[string]string{"leverage": "/params/leverage"}, Allow: "allow", AppliesTo: []string{"family"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.policies.Put(ctx, strict); err != nil {
		t.Fatal(err)
	}
	_, err = r.gate.Load(ctx, out.ID)
	var pe *PolicyError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPolicyRefused) || len(pe.Failures) != 1 || pe.Failures[0].Policy != "no_leverage" ||
		!slices.Equal(pe.Failures[0].Core, []string{"unlevered"}) {
		t.Fatalf("Load under a stricter set: %v %+v", err, pe.Failures)
	}
	if _, err := r.policies.Delete(ctx, "no_leverage"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.gate.Load(ctx, out.ID); err != nil {
		t.Fatalf("Load after the rule is withdrawn: %v", err)
	}
	// Re-decided under another set that admits it, it carries that set's
	// digest, and the data its embargo read.
	lenient, err := policy.Compile("lenient", policy.Policy{
		SMTLIB: "(declare-const leverage Real)\n(define-fun allow () Bool true)\n(assert (! (<= leverage 5.0) :named at_most_5))",
		Bind:   map[string]string{"leverage": "/params/leverage"}, Allow: "allow", AppliesTo: []string{"family"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.policies.Put(ctx, lenient); err != nil {
		t.Fatal(err)
	}
	gr, err := r.gate.Load(ctx, out.ID)
	if err != nil {
		t.Fatalf("Load under a lenient set: %v", err)
	}
	if gr.Policies() != r.policies.Current().Digest || gr.Policies() == *out.Record.Policies {
		t.Errorf("re-decided grounding names set %s; in force %s, grounded under %s", gr.Policies(), r.policies.Current().Digest, *out.Record.Policies)
	}
	if d, ok := gr.DataDigest(); !ok || d != *out.Record.DataDigest {
		t.Errorf("re-decided grounding pins data %v %v, want %s", d, ok, out.Record.DataDigest)
	}
}

// A solver that cannot run is the server's failure: no decision, nothing
// stored, never an admission.
func TestPolicySolverFailure(t *testing.T) {
	r := newPolicyRig(t, smt.Solver{Kind: smt.KindZ3, Command: "groundgate-no-such-solver", Package: "z3"})
	ev := r.discover(t, "momentum", "sharpe")
	out, err := r.gate.Ground(context.Background(), Proposal{
		Request:     []byte(`{"family":"MOM_WZS","metric":"SRP","params":{"window":20},"data":"fx-fed-h10/daily.csv"}`),
		DiscoveryID: ev.ID})
	if !errors.Is(err, policy.ErrNoSolver) || !out.ID.IsZero() || out.Grounded != nil {
		t.Fatalf("Ground = %+v, %v; want ErrNoSolver and no record", out, err)
	}
	if !strings.Contains(err.Error(), "apt-get install z3") {
		t.Errorf("the error does not name the package: %v", err)
	}
}

// Lint and diff range /grid/points up to the gate's own limit.
func TestPolicyGridLimit(t *testing.T) {
	if policy.MaxGridPoints != MaxGridPoints {
		t.Fatalf("policy.MaxGridPoints %d, ground.MaxGridPoints %d", policy.MaxGridPoints, MaxGridPoints)
	}
}

// A pipeline meets the policies twice over: each step those governing
// its operation or signal (by name or kind), reading the step's own
// parameters; the whole those governing every strategy (kind family) or
// its metric, with the output step's parameters in the family's place and
// the whole grid's points — so the shipped desk rules (leverage caps, the
// holdout embargo, the grid cap, the vendor licence) bind pipelines too.
func TestPolicyPipeline(t *testing.T) {
	r := newPolicyRig(t, smt.Z3())
	ctx := context.Background()
	window, err := policy.Compile("zscore_window", policy.Policy{
		SMTLIB: "(declare-const w Int)\n(define-fun allow () Bool true)\n(assert (! (>= w 20) :named window_at_least_20))",
		Bind:   map[string]string{"w": "/params/window"}, Allow: "allow", AppliesTo: []string{"wzs"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.policies.Put(ctx, window); err != nil {
		t.Fatal(err)
	}
	ev := r.discover(t, pipelineTerms...)
	const cushing = "eia-nymex-futures/crude-oil-wti-cushing.csv"
	cases := []struct {
		name string
		edit func(d map[string]any, s []any)
		want []want // F11 failures (field), with their policy in order
		pol  []string
	}{
		{"admitted", func(d map[string]any, _ []any) { d["data"] = cushing }, nil, nil},
		{"a step's own rule", func(d map[string]any, s []any) {
			d["data"] = cushing
			stepAt(s, 1)["params"] = map[string]any{"window": []any{10, 50}}
		}, []want{{"pipeline[1].params.window", F11}}, []string{"zscore_window"}},
		{"the output step's leverage", func(d map[string]any, s []any) {
			d["data"] = cushing
			stepAt(s, 3)["params"] = map[string]any{"leverage": 3}
		}, []want{{"data", F11}}, []string{"leverage_by_asset_class"}},
		{"the embargo reads the data", func(d map[string]any, _ []any) { d["data"] = "oil-spot/wti-daily.csv" },
			[]want{{"data.last_date", F11}}, []string{"holdout_embargo"}},
		{"the grid spans every step", func(d map[string]any, s []any) {
			d["data"] = cushing
			stepAt(s, 1)["params"] = map[string]any{"window": []any{20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170, 180}}
			stepAt(s, 2)["params"] = map[string]any{"lo": []any{-1, -2, -3, -4}, "hi": []any{1, 2, 3, 4}}
		}, []want{{"grid.points", F11}}, []string{"grid_size_cap"}},
		{"the output step's leverage, alone", func(d map[string]any, s []any) {
			d["data"] = "fx-fed-h10/daily.csv"
			stepAt(s, 3)["params"] = map[string]any{"leverage": []any{1, 4}}
		}, []want{{"pipeline[3].params.leverage", F11}}, []string{"leverage_by_asset_class"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := r.ground(t, edit(t, tc.edit), ev.ID)
			var got []want
			var pols []string
			for _, f := range out.Record.Decision.Failures {
				got = append(got, want{f.Field, f.Code})
				pols = append(pols, f.Policy)
			}
			if !slices.Equal(got, tc.want) || !slices.Equal(pols, tc.pol) {
				t.Fatalf("failures %v (policies %v), want %v %v:\n%s", got, pols, tc.want, tc.pol, failureText(out))
			}
		})
	}
	// The step rule governs wzs in a pipeline, not a family that uses it.
	fam := r.ground(t, []byte(`{"family":"MOM_WZS","metric":"SRP","params":{"window":10},"data":"`+cushing+`"}`), r.discover(t, "momentum", "sharpe").ID)
	if f := f11(fam); len(f) != 0 {
		t.Fatalf("a step policy refused a family request: %+v", f)
	}
}
