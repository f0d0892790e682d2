package discover

import (
	"context"
	"slices"
	"testing"

	"github.com/groundgate/groundgate/registry"
)

func TestUnwrapNeg(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{"(a (neg (b x)) y)", []string{"(a (b x) y)"}},
		{"(neg x)", []string{"x"}},
		{"(a  (neg\n(neg x)) )", []string{"(a (neg x))"}},
		{"(a (neg x y))", nil}, // not a one-argument neg
		{"(a (b x))", nil},
		{"(a (neg x) (neg y))", []string{"(a (neg x) y)", "(a x (neg y))"}},
	} {
		e, err := parseExpr(tc.expr)
		if err != nil {
			t.Fatalf("%q: %v", tc.expr, err)
		}
		if got := unwrapNeg(e); !slices.Equal(got, tc.want) {
			t.Errorf("unwrapNeg(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
	for _, bad := range []string{"", "(", ")", "(a))", "(a) b", "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((x))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))"} {
		if _, err := parseExpr(bad); err == nil {
			t.Errorf("parseExpr(%q) succeeded", bad)
		}
	}
}

// widget is a family of a made-up domain: the inversion rule knows nothing
// of trading.
func widget(name string, o registry.Orientation, expr string, params ...string) registry.Entry {
	e := registry.Entry{
		Name: name,
		Kind: registry.KindFamily,
		Sem:  registry.Semantic{Pure: true, Deterministic: true, Orientation: o},
		Alg:  registry.Algebraic{Inputs: []string{"frame"}, Outputs: []string{"pnl"}, Arity: 1},
		Impl: registry.Implementation{Engine: "widgets/v0", IR: registry.IRPipeline, Expr: expr},
		Disc: registry.Discovery{Description: "A widget routing rule for the test " + name + "."},
	}
	for _, p := range params {
		e.Alg.Params = append(e.Alg.Params, registry.Param{Name: p, Type: registry.ParamInt})
	}
	return e
}

// TestInversionRule: opposites are families with opposite orientations,
// equal other layers, and expressions one (neg …) apart.
func TestInversionRule(t *testing.T) {
	ctx := context.Background()
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	up := widget("W_UP", registry.OrientPositive, "(route (smooth (flow x) $k) $cap)", "k", "cap")
	up.Disc.Aliases = []string{"widget flow"}
	es := []registry.Entry{
		up,
		widget("W_DOWN", registry.OrientNegative, "(route (neg (smooth (flow x) $k)) $cap)", "k", "cap"),
		widget("W_DOWN_OUTER", registry.OrientNegative, "(neg (route (smooth (flow x) $k) $cap))", "k", "cap"),
		// Not opposites of W_UP:
		widget("W_SAME_SIGN", registry.OrientPositive, "(route (smooth (neg (flow x)) $k) $cap)", "k", "cap"),
		widget("W_OTHER_ALG", registry.OrientNegative, "(route (neg (smooth (flow x) $k)) $cap $extra)", "k", "cap", "extra"),
		widget("W_TWO_NEGS", registry.OrientNegative, "(route (neg (smooth (neg (neg (flow x))) $k)) $cap)", "k", "cap"),
		widget("W_UNRELATED", registry.OrientNegative, "(route (neg (jitter x)) $cap)", "k", "cap"),
	}
	if _, _, err := s.Apply(ctx, es); err != nil {
		t.Fatal(err)
	}
	r := mustDiscover(t, d, Query{Prompt: "Widget flow, but the opposite."})
	var got []string
	for _, m := range r.Matches {
		if m.Mode == ModeInversion {
			if m.Inverts != "W_UP" {
				t.Errorf("%+v", m)
			}
			got = append(got, m.Name)
		}
	}
	if want := []string{"W_DOWN", "W_DOWN_OUTER"}; !slices.Equal(got, want) {
		t.Errorf("opposites of W_UP: %v, want %v", got, want)
	}
	// The relation is symmetric.
	d.mu.RLock()
	defer d.mu.RUnlock()
	if got := d.cur.opposites("W_DOWN"); !slices.Equal(got, []string{"W_UP"}) {
		t.Errorf("opposites of W_DOWN: %v", got)
	}
	// Built-in: MOM_WZS and MOM_REV, nothing else.
	for name, want := range map[string][]string{"MOM_WZS": {"MOM_REV"}, "MOM_REV": {"MOM_WZS"}, "CARRY": nil, "VOL_TGT": nil} {
		if got := d.cur.opposites(name); !slices.Equal(got, want) {
			t.Errorf("opposites of %s: %v, want %v", name, got, want)
		}
	}
}
