package execution

import (
	"errors"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/registry"
)

func TestParseExpr(t *testing.T) {
	ok := []struct{ in, canon string }{
		{"(dlog x)", "(dlog x)"},
		{"  ( clip\t(wzs (cs0 (dlog x)) $window)\n-1   1 ) ", "(clip (wzs (cs0 (dlog x)) $window) -1 1)"},
		{"(mul x 0.10)", "(mul x 0.1)"},
		{"(add x +2.50e1)", "(add x 25)"},
		{"(add x .5)", "(add x 0.5)"},
		{"(add x 5.)", "(add x 5)"},
		{"(add x 1e21)", "(add x 1e+21)"},
		{"(add x -0)", "(add x -0)"},
		{"(add x 1E-7)", "(add x 1e-07)"},
		{"(const $value)", "(const $value)"},
		{"x", "x"},
		{"$window", "$window"},
		{"-1", "-1"},
		{"(- x y)", "(- x y)"},
		{"(f)", "(f)"},
	}
	for _, c := range ok {
		e, err := parseExpr(c.in)
		if err != nil {
			t.Errorf("parse %q: %v", c.in, err)
			continue
		}
		if got := e.String(); got != c.canon {
			t.Errorf("parse %q = %q, want %q", c.in, got, c.canon)
		}
	}
	bad := []string{
		"", "   ", "(", ")", "()", "(dlog x", "(dlog x))", "(dlog x) y", "((dlog) x)", "(1 x)", "($w x)",
		"(dlog x,)", "(dlog \"x\")", "(add x 1e400)", "(add x 1x)", "(add x 1e)", "(dlog $)", "(dlog $a-b)",
		"(dlog x)(dlog y)", strings.Repeat("(f ", maxExprDepth+2) + "x" + strings.Repeat(")", maxExprDepth+2),
		"(add x 0x10)", "(dlog é)",
	}
	for _, in := range bad {
		if e, err := parseExpr(in); err == nil || !errors.Is(err, errSyntax) {
			t.Errorf("parse %q = %v, %v; want a syntax error", in, e, err)
		}
	}
}

// Every expression in the built-in catalog parses, and its canonical form
// is a fixed point.
func TestCatalogExpressionsParse(t *testing.T) {
	cat, err := registry.BuiltinCatalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range cat {
		x, err := parseExpr(e.Impl.Expr)
		if err != nil {
			t.Errorf("%s: %q: %v", e.Name, e.Impl.Expr, err)
			continue
		}
		y, err := parseExpr(x.String())
		if err != nil || y.String() != x.String() {
			t.Errorf("%s: canonical form %q does not round-trip: %v", e.Name, x.String(), err)
		}
	}
}

// FuzzParseExpr: parsing never panics; whatever parses has a canonical
// form that parses to the same canonical form (idempotent), and the tree
// survives the round trip.
func FuzzParseExpr(f *testing.F) {
	cat, err := registry.BuiltinCatalog()
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range cat {
		f.Add(e.Impl.Expr)
	}
	for _, s := range []string{"(add x -0)", "(add x 1e21)", "(a (b (c $d) 1.5e-7) -.5)", "((", "(x $", "(f\tx\ny\r)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := parseExpr(s)
		if err != nil {
			if !errors.Is(err, errSyntax) {
				t.Fatalf("parse %q: error %v does not wrap errSyntax", s, err)
			}
			return
		}
		c := e.String()
		e2, err := parseExpr(c)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", c, s, err)
		}
		if c2 := e2.String(); c2 != c {
			t.Fatalf("canonical form not idempotent: %q → %q", c, c2)
		}
		if !sameTree(e, e2) {
			t.Fatalf("tree of %q changed through %q", s, c)
		}
	})
}

func sameTree(a, b *expr) bool {
	if a.kind != b.kind || a.name != b.name || len(a.list) != len(b.list) {
		return false
	}
	if a.kind == exprNumber && a.num != b.num {
		return false
	}
	for i := range a.list {
		if !sameTree(a.list[i], b.list[i]) {
			return false
		}
	}
	return true
}
