package execution

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/registry"
)

// Each risk predicate, named when it fails, through the whole pipeline.
func TestRiskPredicates(t *testing.T) {
	r := newRig(t, realData, Options{MaxLeverage: 3})
	cases := []struct {
		name   string
		req    map[string]any
		reject []string // the rejected list of each morphism, "" for admissible
		// gateF9 says the gate refuses the request (a precondition over the
		// request alone); the executor is then driven directly, as if a
		// request had got through, and must reject the same morphisms.
		gateF9 bool
	}{
		{"leverage over the bound", request("MOM_WZS", "SRP", "ffn-test-data.csv", map[string]any{"window": 20, "leverage": []any{1, 3, 3.5}}),
			[]string{"", "", "leverage"}, false},
		{"negative target volatility", request("VOL_TGT", "SRP", "ffn-test-data.csv", map[string]any{"target_vol": []any{0.1, -0.1}}),
			[]string{"", "non_negative,bounds,domain,pre"}, true},
		{"negative window", request("MOM_REV", "SRP", "ffn-test-data.csv", map[string]any{"window": []any{-5, 5}}),
			[]string{"non_negative,bounds,domain", ""}, false},
		{"window below the kernel minimum", request("MOM_WZS", "SRP", "ffn-test-data.csv", map[string]any{"window": []any{0, 1, 2}}),
			[]string{"bounds,domain", "bounds,domain", ""}, false},
		{"zero leverage (within schema bounds, outside the kernel's domain)", request("MOM_WZS", "SRP", "ffn-test-data.csv", map[string]any{"window": 20, "leverage": []any{0, 1}}),
			[]string{"domain,pre", ""}, true},
		{"zero lag would look ahead", request("VOL_TGT", "SRP", "ffn-test-data.csv", map[string]any{"lag": []any{0, 1}}),
			[]string{"bounds,domain", ""}, false},
		{"carry columns not in the data", request("CARRY", "SRP", "crude-oil-wti-cushing.csv", map[string]any{"window": 60, "front": []any{"C1", "C9"}}),
			[]string{"", "data,pre"}, false},
		{"carry front equal to next", request("CARRY", "SRP", "crude-oil-wti-cushing.csv", map[string]any{"window": 60, "front": []any{"C1", "C2"}}),
			[]string{"", "domain,pre"}, true},
		{"every predicate but resolves and schema at once", request("MOM_WZS", "SRP", "nope.csv", map[string]any{"window": -1, "leverage": 20}),
			[]string{"data,non_negative,leverage,bounds,domain"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var fp *Footprint
			if c.gateF9 {
				fp = r.computeUngated(t, c.req)
			} else {
				fp = r.execute(t, c.req)
			}
			if len(fp.Morphisms) != len(c.reject) {
				t.Fatalf("%d morphisms, want %d", len(fp.Morphisms), len(c.reject))
			}
			for i, m := range fp.Morphisms {
				got := strings.Join(m.Rejected, ",")
				if got != c.reject[i] || m.Admissible != (got == "") {
					t.Errorf("morphism %d %v: rejected %q (admissible %v), want %q; reasons %+v", i, m.Params, got, m.Admissible, c.reject[i], m.Reasons)
				}
				if _, scored := m.Score.Value(); scored && !m.Admissible {
					t.Errorf("morphism %d was scored though rejected", i)
				}
				if !m.Admissible && len(m.Artifacts) != 0 {
					t.Errorf("morphism %d has artifacts though rejected", i)
				}
				if len(m.Reasons) < len(m.Rejected) {
					t.Errorf("morphism %d: %d reasons for %d predicates", i, len(m.Reasons), len(m.Rejected))
				}
			}
			if fp.SelectedIndex != nil && !fp.Morphisms[*fp.SelectedIndex].Admissible {
				t.Error("a rejected morphism was selected")
			}
		})
	}
}

// computeUngated checks that the gate refuses req with F9, then runs it
// anyway, as if it had got through: the executor must hold the line too.
func (r *rig) computeUngated(t *testing.T, req map[string]any) *Footprint {
	t.Helper()
	ctx := context.Background()
	out := r.groundOutcome(t, req)
	if out.Grounded != nil || len(out.Record.Decision.Failures) == 0 || out.Record.Decision.Failures[0].Code != ground.F9 {
		t.Fatalf("the gate did not refuse with F9: %+v", out.Record.Decision.Failures)
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	decoded, fails := ground.DecodeRequest(body)
	if len(fails) > 0 {
		t.Fatal(fails)
	}
	minimal := map[string]any{"window": 20} // an admissible request to take the grounding from
	if decoded.Family == "VOL_TGT" {
		minimal = nil
	}
	g := r.ground(t, request(decoded.Family, decoded.Metric, decoded.Data, minimal))
	in := r.inputFor(t, g)
	in.req = decoded
	o, err := compute(ctx, in, r.x.runOptions())
	if err != nil {
		t.Fatal(err)
	}
	return o.fp
}

// Parameters the gate refuses (undeclared, missing, wrong type) are
// rejected by the executor too, should a request ever get through.
func TestSchemaPredicate(t *testing.T) {
	r := newRig(t, realData, Options{})
	ctx := context.Background()
	g := r.ground(t, request("MOM_WZS", "SRP", "ffn-test-data.csv", map[string]any{"window": 20}))
	in := r.inputFor(t, g)
	in.req.Params = map[string]ground.Param{
		"speed":  {Values: []ground.Scalar{ground.Number(3)}},
		"lag":    {Values: []ground.Scalar{ground.Number(1.5)}},
		"front":  {Values: []ground.Scalar{ground.String("C1")}},
		"window": {Values: []ground.Scalar{ground.String("fifty"), ground.Number(20)}, List: true},
	}
	out, err := compute(ctx, in, r.x.runOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range out.fp.Morphisms {
		if m.Admissible || !contains(strings.Join(m.Rejected, ","), PredSchema) {
			t.Errorf("morphism %d %v: %v %+v", m.Index, m.Params, m.Rejected, m.Reasons)
		}
		if _, ok := m.Params["speed"]; !ok {
			t.Errorf("morphism %d does not bind the undeclared parameter", m.Index)
		}
	}
	// Missing required window: no value bound, the plan does not compile.
	in.req.Params = map[string]ground.Param{}
	out, err = compute(ctx, in, r.x.runOptions())
	if err != nil {
		t.Fatal(err)
	}
	if m := out.fp.Morphisms[0]; strings.Join(m.Rejected, ",") != "resolves,schema" || m.Plan != nil {
		t.Errorf("missing window: %v %+v", m.Rejected, m.Reasons)
	}
}

// A family whose expression names something that does not resolve in the
// registry is run by nobody: every morphism fails "resolves".
func TestUnresolvedFamily(t *testing.T) {
	r := newRig(t, realData, Options{})
	ctx := context.Background()
	base, _ := r.store.Current().Get("VOL_TGT")
	e := base.Entry
	e.Name = "TEST_UNRESOLVED"
	e.Impl.Expr = "(volsize (turbo_signal x) (dlog x) $risk_window $target_vol $leverage $lag)"
	e.Disc = registry.Discovery{Description: "A test family whose signal kernel does not exist."}
	if _, err := r.store.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	res, err := r.disc.Discover(ctx, discover.Query{Terms: []string{"TEST_UNRESOLVED", "sharpe"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.gate.Ground(ctx, ground.Proposal{Request: []byte(`{"family":"TEST_UNRESOLVED","metric":"SRP","params":{"lag":[1,2]},"data":"wti-daily.csv"}`), DiscoveryID: res.ID})
	if err != nil || out.Grounded == nil {
		t.Fatalf("ground: %v %+v", err, out.Record.Decision)
	}
	fp, err := r.x.Execute(ctx, out.Grounded)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range fp.Morphisms {
		if strings.Join(m.Rejected, ",") != PredResolves || m.Plan != nil || !contains(m.Reasons[0].Detail, `"turbo_signal" does not resolve`) {
			t.Errorf("morphism %d: %v %+v", m.Index, m.Rejected, m.Reasons)
		}
	}
	if len(fp.Plans) != 0 || fp.Selected != nil {
		t.Errorf("plans %d, selected %v", len(fp.Plans), fp.Selected)
	}
}

// A grounding id determines its execution (SPEC §7): ground at one
// registry version, change the family's behaviour (its impl: the clip
// bound) and the metric's, and the old grounding still runs what the gate
// checked — the same execution hash as before the change. Grounded anew,
// the same request runs the new behaviour. Replaying the old footprint
// after the change reproduces it at every layer.
func TestGroundingPinsRegistryVersion(t *testing.T) {
	r := newRig(t, realData, Options{})
	ctx := context.Background()
	req := request("MOM_WZS", "SRP", "wti-daily.csv", map[string]any{"window": []any{25, 50}})
	g := r.ground(t, req)
	before, err := r.x.Execute(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(e *registry.Entry){
		"MOM_WZS": func(e *registry.Entry) { e.Impl.Expr = strings.Replace(e.Impl.Expr, "-1 1)", "-2 2)", 1) },
		"SRP":     func(e *registry.Entry) { e.Impl.Expr = "(sharpe_v2 p)" },
	} {
		c, _ := r.store.Current().Get(name)
		e := c.Entry
		edit(&e)
		res, err := r.store.Put(ctx, e)
		if err != nil || !res.Changed || res.Capability.Identity == c.Identity {
			t.Fatalf("edit %s: %+v %v", name, res, err)
		}
	}
	if v := r.store.Current().Version(); v <= g.RegistryVersion() {
		t.Fatalf("registry still at version %d", v)
	}

	after, err := r.x.Execute(ctx, g)
	if err != nil {
		t.Fatalf("the old grounding no longer executes: %v", err)
	}
	if after.Hash != before.Hash || after.RegistryVersion != g.RegistryVersion() {
		t.Fatalf("the old grounding ran %s at version %d, before the change %s at version %d",
			after.Hash, after.RegistryVersion, before.Hash, before.RegistryVersion)
	}
	rep, err := r.x.Replay(ctx, before.Hash)
	if err != nil || !rep.Match {
		t.Fatalf("replay after the change: %+v %v", rep, err)
	}

	// Grounded again today, the metric's new expression names no kernel:
	// not runnable, and nothing is stored.
	fps, blobs := r.counts(t)
	if fp, err := r.x.Execute(ctx, r.ground(t, req)); !errors.Is(err, ErrNotRunnable) || fp != nil {
		t.Fatalf("a grounding at the current version: %v, %v", fp, err)
	}
	if f2, b2 := r.counts(t); f2 != fps || b2 != blobs {
		t.Fatal("an unrunnable execution stored something")
	}
}

// With the metric restored, a new grounding runs the family's new
// behaviour: a different execution of the same request.
func TestNewGroundingRunsNewBehaviour(t *testing.T) {
	r := newRig(t, realData, Options{})
	ctx := context.Background()
	req := request("MOM_WZS", "SRP", "wti-daily.csv", map[string]any{"window": 25})
	before := r.execute(t, req)
	c, _ := r.store.Current().Get("MOM_WZS")
	e := c.Entry
	e.Impl.Expr = strings.Replace(e.Impl.Expr, "-1 1)", "-2 2)", 1)
	if _, err := r.store.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	after := r.execute(t, req)
	if after.Hash == before.Hash || after.Layers.Registry == before.Layers.Registry || after.Layers.Score == before.Layers.Score {
		t.Fatalf("a grounding at the new version ran the old behaviour: %+v vs %+v", after.Layers, before.Layers)
	}
}

func TestNotGrounded(t *testing.T) {
	r := newRig(t, realData, Options{})
	for _, g := range []*ground.Grounded{nil, {}} {
		if fp, err := r.x.Execute(context.Background(), g); !errors.Is(err, ErrNotGrounded) || fp != nil {
			t.Errorf("Execute(%v) = %v, %v", g, fp, err)
		}
	}
}

// Ties go to the earlier morphism in grid order. VOL_TGT with target
// volatility 0.1 and 0.05 (exactly half: the same mantissa) scales every
// weight and P&L by exactly 2 without reaching the leverage cap, so the
// two Sharpe ratios are bit for bit equal.
func TestTiesGoToGridOrder(t *testing.T) {
	r := newRig(t, realData, Options{})
	for _, order := range [][]any{{0.1, 0.05}, {0.05, 0.1}} {
		fp := r.execute(t, request("VOL_TGT", "SRP", "ffn-test-data.csv", map[string]any{"target_vol": order, "leverage": 10}))
		a, _ := fp.Morphisms[0].Score.Value()
		b, _ := fp.Morphisms[1].Score.Value()
		if a != b {
			t.Fatalf("scores %v and %v are not tied", a, b)
		}
		if fp.SelectedIndex == nil || *fp.SelectedIndex != 0 {
			t.Fatalf("order %v: selected %v, want 0", order, deref(fp.SelectedIndex))
		}
	}
	// Direction: MDD is minimised, SRP maximised.
	fpMax := r.execute(t, request("MOM_WZS", "SRP", "ffn-test-data.csv", map[string]any{"window": []any{5, 20, 60}}))
	fpMin := r.execute(t, request("MOM_WZS", "MDD", "ffn-test-data.csv", map[string]any{"window": []any{5, 20, 60}}))
	for _, c := range []struct {
		fp     *Footprint
		better func(a, b float64) bool
	}{{fpMax, func(a, b float64) bool { return a > b }}, {fpMin, func(a, b float64) bool { return a < b }}} {
		best, _ := c.fp.Morphisms[*c.fp.SelectedIndex].Score.Value()
		for _, m := range c.fp.Morphisms {
			if v, _ := m.Score.Value(); c.better(v, best) {
				t.Errorf("%s: morphism %d scores %v, better than the selected %v", c.fp.Metric.Name, m.Index, v, best)
			}
		}
	}
}
