package policy

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/policy/smt"
)

// A policy document of any shape compiles or is refused with a
// ValidationError; never a panic. What compiles has a stable id, and every
// term the checker will print from it reads back as one s-expression.
func FuzzCompile(f *testing.F) {
	raw, err := os.ReadFile("testdata/trading.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{"smtlib": "(declare-const x Int)(define-fun allow () Bool (< x 3))", "bind": {"x": "/params/window"}, "allow": "allow", "applies_to": ["family"]}`))
	f.Add([]byte(`{"smtlib": "(declare-const |a b| Int)(declare-const allow Bool)(assert (! (=> allow (< |a b| 3)) :named r))", "bind": {"|a b|": "/params/window"}, "allow": "allow", "applies_to": ["MOM_WZS"]}`))
	f.Add([]byte(`{"smtlib": "(assert (! (! true :named a) :named b))", "bind": {}, "allow": "x", "applies_to": []}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cs, err := ParseFile("fuzz.json", b)
		if err != nil {
			return
		}
		for _, c := range cs {
			again, err := Compile(c.Name, c.Policy)
			if err != nil || again.ID != c.ID {
				t.Fatalf("compiles once, not twice: %v", err)
			}
			ren := func(s string) string { return reserved + "p0." + s }
			for _, term := range []string{c.refuses(ren), c.admits(ren), c.conjunction(ren)} {
				if xs, err := smt.Parse(term); err != nil || len(xs) != 1 {
					t.Fatalf("term %q does not read back: %v", term, err)
				}
			}
		}
	})
}

// Pointers either parse to a field with sorts or are refused.
func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{"/family", "/params/window", "/params/a~1b", "/grid/points", "/facts/data/last_date", "/", "", "~", "/params/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePointer(s)
		if err != nil {
			return
		}
		if p.Text != s || len(p.Sorts()) == 0 || FieldName(s) == s {
			t.Fatalf("%q parsed to %+v", s, p)
		}
	})
}

// A request value becomes one literal atom: no string, however hostile,
// can close the literal and smuggle a command to the solver.
func FuzzLiteral(f *testing.F) {
	f.Add("plain", 1.5)
	f.Add(`") (check-sat) (exit) ("`, -0.0)
	f.Add("\\u{41}\"\"|;\n\x00é😀", math.MaxFloat64)
	f.Fuzz(func(t *testing.T, s string, x float64) {
		if lit, err := literal(Str(s), "String"); err == nil {
			xs, err := smt.Parse(lit)
			if err != nil || len(xs) != 1 || xs[0].IsList || !strings.HasPrefix(xs[0].Atom, `"`) {
				t.Fatalf("%q → %q reads as %v, %v", s, lit, xs, err)
			}
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		for _, sort := range []string{"Real", "Int"} {
			lit, err := literal(Num(x), sort)
			if err != nil {
				continue
			}
			if xs, err := smt.Parse(lit); err != nil || len(xs) != 1 {
				t.Fatalf("%v as %s → %q: %v", x, sort, lit, err)
			}
		}
	})
}
