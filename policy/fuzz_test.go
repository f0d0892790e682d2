package policy

import (
	"encoding/json"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

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
	if airline, err := os.ReadFile("testdata/airline.json"); err == nil {
		f.Add(airline)
	}
	f.Add([]byte(`{"smtlib": "(declare-const x Int)(declare-const allow Bool)(assert (= allow (< x 3)))", "derive": {"x": "size(arguments)"}, "bind": {}, "allow": "allow", "applies_to": ["tool"]}`))
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
	for _, s := range []string{"/family", "/params/window", "/params/a~1b", "/grid/points", "/facts/data/last_date", "/", "", "~", "/params/",
		"/tool", "/tool/", "/arguments", "/arguments/", "/arguments/a~1b/c~0d/0", "/arguments/a~2", "/arguments/~01", "/arguments//x", "/now", "/now/x", "/derive/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePointer(s)
		if err != nil {
			return
		}
		if p.Text != s || len(p.Sorts()) == 0 || FieldName(s) == s || len(s) > MaxPointerLen || !utf8.ValidString(s) {
			t.Fatalf("%q parsed to %+v", s, p)
		}
		if p.ForCall() != (p.Field == "tool" || p.Field == "arguments" || p.Field == "grounding" || p.Field == "now") {
			t.Fatalf("%q: ForCall %v for field %s", s, p.ForCall(), p.Field)
		}
		if p.Field == "arguments" {
			toks, err := pointerTokens(p.Param)
			if err != nil || len(toks) == 0 || len(toks) > MaxPointerDepth || "/arguments"+p.Param != s {
				t.Fatalf("%q: arguments pointer %q gives tokens %q, %v", s, p.Param, toks, err)
			}
			// Escaping the tokens again gives the pointer back.
			var b strings.Builder
			for _, tok := range toks {
				b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
			}
			if b.String() != p.Param {
				t.Fatalf("%q: tokens %q escape to %q", s, toks, b.String())
			}
		}
	})
}

// A pointer into any arguments document gives a value, a missing or a
// type refusal; never a panic. A number's value is the exact decimal of
// its text, and reads back into the solver as one literal.
func FuzzCallArguments(f *testing.F) {
	f.Add(`{"a": {"b": [1, "x", true, null, {"c": 0.10000000000000000001}]}}`, "/arguments/a/b/4/c")
	f.Add(`{"a/b": {"c~d": 1e-400}}`, "/arguments/a~1b/c~0d")
	f.Add(`{"n": -1.5E+3}`, "/arguments/n")
	f.Add(`[1, 2]`, "/arguments/0")
	f.Add(`{"a": [0, 1]}`, "/arguments/a/01")
	f.Add(`{"a": 1, "A": 2}`, "/arguments/a")
	f.Fuzz(func(t *testing.T, args, ptr string) {
		p, err := ParsePointer(ptr)
		if err != nil || p.Field != "arguments" {
			return
		}
		vs, err := Request{Tool: "u.t", Arguments: json.RawMessage(args)}.values(p)
		if err != nil {
			return
		}
		if len(vs) != 1 {
			t.Fatalf("%s in %s: %d values", ptr, args, len(vs))
		}
		v := vs[0]
		if v.IsStr || v.IsBool {
			return
		}
		if math.IsNaN(v.Num) || math.IsInf(v.Num, 0) {
			t.Fatalf("%s in %s: %v is not finite", ptr, args, v.Num)
		}
		lit, err := literal(v, "Real")
		if err != nil {
			t.Fatalf("%s in %s: %v as a Real: %v", ptr, args, v, err)
		}
		if xs, err := smt.Parse(lit); err != nil || len(xs) != 1 {
			t.Fatalf("%v as a Real → %q: %v", v, lit, err)
		}
	})
}

// NumberValue keeps a JSON number's exact value: its decimal (Exact, or
// else Num's shortest decimal) is the text's rational value.
func FuzzNumberValue(f *testing.F) {
	for _, s := range []string{"0", "-0", "0.1", "0.10000000000000000001", "1e-400", "1e400", "9007199254740993", "-1.5E+3", "01", "1.", "1e999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := NumberValue(s)
		if err != nil {
			return
		}
		want, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("%q: accepted, but not a number", s)
		}
		dec := v.Exact
		if dec == "" {
			dec = strconv.FormatFloat(v.Num, 'f', -1, 64)
		}
		got, ok := new(big.Rat).SetString(dec)
		if !ok || got.Cmp(want) != 0 || strings.ContainsAny(v.Exact, "eE+") {
			t.Fatalf("%q → %+v (%s), want the value %s", s, v, dec, want.RatString())
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
