package execution

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/execution/frame"
	"github.com/groundgate/groundgate/execution/kernel"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/registry/registrytest"
)

func loadReal(t testing.TB, name string) *frame.Frame {
	t.Helper()
	f, err := frame.LoadFile(filepath.Join(realData, name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func seededSnapshot(t testing.TB) *registry.Snapshot {
	t.Helper()
	return registrytest.Seeded(t, filepath.Join(t.TempDir(), "r.db"), registry.Options{}).Current()
}

// compileFamily compiles the registry's expression of a family for the
// kernel parameters p.
func compileFamily(t testing.TB, snap *registry.Snapshot, family string, p kernel.Params) *compiled {
	t.Helper()
	c, ok := snap.Get(family)
	if !ok {
		t.Fatalf("no family %s", family)
	}
	e, err := parseExpr(c.Impl.Expr)
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]Value{
		"window": Num(float64(p.Window)), "risk_window": Num(float64(p.RiskWindow)),
		"leverage": Num(p.Leverage), "target_vol": Num(p.TargetVol), "lag": Num(float64(p.Lag)),
		"front": Str(p.Front), "next": Str(p.Next),
	}
	cp, err := compilePlan(snap, CapRef{Name: c.Name, Kind: c.Kind, Identity: c.Identity}, e, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.domain) > 0 {
		t.Fatalf("%s %+v: domain failures %v", family, p, cp.domain)
	}
	return cp
}

func sameBits(a, b []float64) (int, bool) {
	if len(a) != len(b) {
		return -1, false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return i, false
		}
	}
	return 0, true
}

// The registry's impl.expr, interpreted over the kernels, gives bit for
// bit the weights and P&L of the kernel package's own implementation of
// each family (kernel.RunFamily, itself checked against pandas), on real
// data, with shared and unshared node values.
func TestInterpreterMatchesKernel(t *testing.T) {
	snap := seededSnapshot(t)
	type cfg struct {
		family, data string
		p            kernel.Params
	}
	with := func(mod func(*kernel.Params)) kernel.Params {
		p := kernel.DefaultParams()
		p.Window = 50
		mod(&p)
		return p
	}
	var cases []cfg
	for _, data := range []string{"wti-daily.csv", "ffn-test-data.csv", "vix-daily.csv", "natural-gas-daily.csv", "sp500.csv.gz", "crude-oil-wti-cushing.csv"} {
		for _, fam := range []string{"MOM_WZS", "MOM_REV", "VOL_TGT"} {
			cases = append(cases,
				cfg{fam, data, with(func(p *kernel.Params) {})},
				cfg{fam, data, with(func(p *kernel.Params) { p.Window, p.RiskWindow, p.Leverage, p.TargetVol, p.Lag = 5, 250, 0.5, 0.05, 3 })},
			)
		}
	}
	for _, p := range []kernel.Params{
		with(func(p *kernel.Params) { p.Window = 60 }),
		with(func(p *kernel.Params) { p.Window, p.Front, p.Next, p.RiskWindow, p.Leverage = 20, "C2", "C3", 20, 2 }),
		with(func(p *kernel.Params) { p.Window, p.Front, p.Next, p.Lag = 120, "C3", "C4", 2 }),
	} {
		cases = append(cases, cfg{"CARRY", "crude-oil-wti-cushing.csv", p})
	}
	frames := map[string]*frame.Frame{}
	ctx := context.Background()
	for _, c := range cases {
		name := fmt.Sprintf("%s/%s/w%d-rw%d-L%g-tv%g-lag%d-%s-%s", c.data, c.family, c.p.Window, c.p.RiskWindow, c.p.Leverage, c.p.TargetVol, c.p.Lag, c.p.Front, c.p.Next)
		t.Run(name, func(t *testing.T) {
			f := frames[c.data]
			if f == nil {
				f = loadReal(t, c.data)
				frames[c.data] = f
			}
			want, err := kernel.RunFamily(c.family, f, c.p)
			if err != nil {
				t.Fatal(err)
			}
			cp := compileFamily(t, snap, c.family, c.p)
			for _, share := range []bool{false, true} {
				var m *memo
				if share {
					m = newMemo([]gridJob{{plan: cp}}, defaultMemoBytes)
				}
				vals, err := evalPlan(ctx, f, cp, m, 1)
				if err != nil {
					t.Fatal(err)
				}
				got := vals[cp.plan.Output].res
				if fmt.Sprint(got.Assets) != fmt.Sprint(want.Assets) {
					t.Fatalf("assets %v, kernel %v", got.Assets, want.Assets)
				}
				if i, ok := sameBits(got.PnL, want.PnL); !ok {
					t.Fatalf("P&L differs at row %d", i)
				}
				defined := 0
				for _, v := range got.PnL {
					if !math.IsNaN(v) {
						defined++
					}
				}
				if defined < 100 {
					t.Fatalf("only %d P&L rows defined: the comparison is too weak", defined)
				}
				for a := range want.Weights {
					if i, ok := sameBits(got.Weights[a], want.Weights[a]); !ok {
						t.Fatalf("weights of %s differ at row %d", want.Assets[a], i)
					}
				}
				// The turnover series gives TRN bit for bit.
				start := kernel.CommonStart(got.PnL)
				trn, err := kernel.TRNOf(got.PnL, kernel.Turnover(got.Weights, len(got.PnL)), start)
				if err != nil {
					t.Fatal(err)
				}
				if ref, _ := kernel.Evaluate("TRN", want.PnL, want.Weights, start); math.Float64bits(trn) != math.Float64bits(ref) {
					t.Fatalf("TRN %v, kernel %v", trn, ref)
				}
			}
		})
	}
}

// The plan of MOM_WZS names the registry identity of every operation it
// uses, shares (dlog x) between the signal and the sizing, and holds the
// bound parameters, not the metric.
func TestPlanShape(t *testing.T) {
	snap := seededSnapshot(t)
	p := kernel.DefaultParams()
	p.Window = 25
	cp := compileFamily(t, snap, "MOM_WZS", p)
	var ops []string
	for _, n := range cp.plan.Nodes {
		ops = append(ops, n.Op)
		if c, ok := snap.Get(n.Op); ok {
			if n.Capability == nil || *n.Capability != c.Identity {
				t.Errorf("node %s: capability %v, registry identity %s", n.Op, n.Capability, c.Identity)
			}
		} else if n.Capability != nil {
			t.Errorf("built-in %s has a capability", n.Op)
		}
	}
	if got := fmt.Sprint(ops); got != "[input dlog cs0 wzs clip trailing_vol volsize]" {
		t.Fatalf("nodes %s", got)
	}
	var names []string
	for _, c := range cp.plan.Capabilities {
		names = append(names, c.Name)
	}
	if got := fmt.Sprint(names); got != "[MOM_WZS clip cs0 dlog wzs]" {
		t.Fatalf("capabilities %s", got)
	}
	if fmt.Sprint(cp.plan.Builtins) != "[trailing_vol volsize]" {
		t.Fatalf("builtins %v", cp.plan.Builtins)
	}
	// Composite operations and signals expand: a family written with the
	// REL_MOM_Z signal block and the cumdlog operation compiles to the
	// same nodes as MOM_WZS.
	e, err := parseExpr("(volsize (REL_MOM_Z x $window) (dlog x) $risk_window $target_vol $leverage $lag)")
	if err != nil {
		t.Fatal(err)
	}
	fam, _ := snap.Get("MOM_WZS")
	params := map[string]Value{"window": Num(25), "risk_window": Num(60), "leverage": Num(1), "target_vol": Num(0.1), "lag": Num(1)}
	cp2, err := compilePlan(snap, CapRef{Name: fam.Name, Kind: fam.Kind, Identity: fam.Identity}, e, params)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := hashingCanonical(cp.plan.Nodes)
	b, _ := hashingCanonical(cp2.plan.Nodes)
	if a != b {
		t.Fatalf("expanded signal compiles to other nodes:\n%s\n%s", a, b)
	}
	if _, ok := findCap(cp2.plan.Capabilities, "REL_MOM_Z"); !ok {
		t.Fatalf("the expanded signal is not among the plan's capabilities: %v", cp2.plan.Capabilities)
	}
}

func findCap(cs []CapRef, name string) (CapRef, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c, true
		}
	}
	return CapRef{}, false
}

// Structural failures fail "resolves"; value failures fail "domain" and
// keep a plan.
func TestCompileFailures(t *testing.T) {
	snap := seededSnapshot(t)
	fam, _ := snap.Get("MOM_WZS")
	ref := CapRef{Name: fam.Name, Kind: fam.Kind, Identity: fam.Identity}
	good := map[string]Value{"window": Num(25), "risk_window": Num(60), "leverage": Num(1), "target_vol": Num(0.1), "lag": Num(1)}
	mod := func(k string, v Value) map[string]Value {
		m := map[string]Value{}
		for a, b := range good {
			m[a] = b
		}
		m[k] = v
		return m
	}
	cases := []struct {
		expr    string
		params  map[string]Value
		resolve string // substring of the compile error, "" for none
		domain  string // substring of a domain failure
	}{
		{fam.Impl.Expr, good, "", ""},
		{"(volsize (nosuch x) (dlog x) 60 0.1 1 1)", good, `"nosuch" does not resolve`, ""},
		{"(volsize (MOM_REV x) (dlog x) 60 0.1 1 1)", good, "is a family", ""},
		{"(volsize (dlog x x) (dlog x) 60 0.1 1 1)", good, "takes 1 argument", ""},
		{"(volsize (dlog x) (dlog x) $nope 0.1 1 1)", good, "$nope is not bound", ""},
		{"(volsize (dlog y) (dlog x) 60 0.1 1 1)", good, `"y" is not an input`, ""},
		{"(dlog x)", good, "must be volsize", ""},
		{"(volsize (wzs x \"a\") (dlog x) 60 0.1 1 1)", good, "syntax", ""},
		{"(volsize (xs_rank x) (dlog x) 60 0.1 1 1)", good, `"xs_rank" does not resolve`, ""},
		{"(volsize (xs_mean x) (dlog x) 60 0.1 1 1)", good, "", ""},
		{fam.Impl.Expr, mod("window", Num(1)), "", "wzs: window 1 is below 2"},
		{fam.Impl.Expr, mod("window", Num(2.5)), "", "not an integer"},
		{fam.Impl.Expr, mod("leverage", Num(0)), "", "leverage 0 must be finite and > 0"},
		{fam.Impl.Expr, mod("lag", Num(0)), "", "lag 0 is below 1"},
		{"(volsize (clip (dlog x) 1 -1) (dlog x) 60 0.1 1 1)", good, "", "must not exceed"},
		{"(volsize (log 0) (dlog x) 60 0.1 1 1)", good, "", "non-finite"},
		{"(volsize (wzs (sub (log (col x \"C1\")) (log (col x \"C1\"))) 5) (dlog x) 60 0.1 1 1)", good, "syntax", ""},
		{"(volsize (sub (dlog x) (dlog x)) (dlog x) 60 0.1 1 1)", good, "", "same series"},
		{"(volsize (add (dlog x) (dlog x)) (dlog x) 60 0.1 1 1)", good, "", ""},
		{"(volsize (const 1) (dlog x) 60 (div 1 0) 1 1)", good, "", "non-finite"},
	}
	for _, c := range cases {
		e, err := parseExpr(c.expr)
		if err != nil {
			if c.resolve != "syntax" {
				t.Errorf("%s: %v", c.expr, err)
			}
			continue
		}
		cp, err := compilePlan(snap, ref, e, c.params)
		switch {
		case c.resolve != "":
			var ce *compileError
			if err == nil || !errorsAs(err, &ce) || !contains(err.Error(), c.resolve) {
				t.Errorf("%s: error %v, want a compile error with %q", c.expr, err, c.resolve)
			}
		case err != nil:
			t.Errorf("%s %v: %v", c.expr, c.params, err)
		case c.domain == "" && len(cp.domain) > 0:
			t.Errorf("%s %v: domain failures %v", c.expr, c.params, cp.domain)
		case c.domain != "" && !contains(fmt.Sprint(cp.domain), c.domain):
			t.Errorf("%s %v: domain failures %v, want %q", c.expr, c.params, cp.domain, c.domain)
		}
	}
}

// A kernel's panic rejects its morphism with a reason whose text is
// hashed: PanicError must spell it as the executor always has, and have
// no kind (a panic is a bug, never the request's fault).
func TestPanicError(t *testing.T) {
	for _, c := range []struct {
		err  *PanicError
		want string
	}{
		{&PanicError{Value: "boom"}, fmt.Sprintf("internal error: %v", "boom")},
		{&PanicError{Op: "volsize", Value: fmt.Errorf("index out of range [3] with length 3")},
			fmt.Sprintf("%s: internal error: %v", "volsize", fmt.Errorf("index out of range [3] with length 3"))},
		{&PanicError{Op: "dlog", Value: 7}, "dlog: internal error: 7"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
		if k := errkind.Of(fmt.Errorf("run: %w", c.err)); k != errkind.Unknown {
			t.Errorf("%v has kind %v", c.err, k)
		}
	}
}

// A value shared through the memo whose computation panics fails every
// user with the PanicError, not a crash.
func TestMemoPanic(t *testing.T) {
	m := &memo{m: map[string]*memoEntry{"k": {}}, limit: 1 << 20}
	_, err := m.get("k", func() (rval, error) { panic("kernel bug") })
	var pe *PanicError
	if !errors.As(err, &pe) || err.Error() != "internal error: kernel bug" {
		t.Fatalf("got %v", err)
	}
	if _, again := m.get("k", func() (rval, error) { return rval{}, nil }); again != err {
		t.Fatalf("the second user got %v", again)
	}
}
