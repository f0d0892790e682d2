package smt

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // canonical forms
		err       string   // substring of the error, "" for success
	}{
		{"atoms and lists", "(assert (<= lev 2.0)) x", []string{"(assert (<= lev 2.0))", "x"}, ""},
		{"string escapes", `(= s "say ""hi"" (not a paren")`, []string{`(= s "say ""hi"" (not a paren")`}, ""},
		{"quoted symbol", "(declare-const |a b)| Int)", []string{"(declare-const |a b)| Int)"}, ""},
		{"comments dropped", "; head (\n(a ; inner )\n b)", []string{"(a b)"}, ""},
		{"empty list", "()", []string{"()"}, ""},
		{"keywords and literals", "(! x :named n) #x1F #b01", []string{"(! x :named n)", "#x1F", "#b01"}, ""},
		{"unclosed", "(a\n (b c)", nil, "1:1: unclosed '('"},
		{"extra close", "(a))", nil, "1:4: unexpected ')'"},
		{"unterminated string", `(a "bc)`, nil, "1:4: unterminated string literal"},
		{"unterminated symbol", `(a |bc)`, nil, "1:4: unterminated quoted symbol"},
		{"backslash in symbol", `|a\b|`, nil, `'\' inside a quoted symbol`},
		{"control char", "(a \x01)", nil, "1:4: unexpected character"},
		{"control char in string", "\"a\x00\"", nil, "control character"},
		{"bad utf8", "(a \xff)", nil, "not valid UTF-8"},
		{"too deep", strings.Repeat("(", maxDepth+1) + strings.Repeat(")", maxDepth+1), nil, "nesting deeper"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.src)
			if tc.err != "" {
				var se *SyntaxError
				if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse(%q) error = %v, want a SyntaxError containing %q", tc.src, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.src, err)
			}
			var forms []string
			for _, s := range got {
				forms = append(forms, s.String())
			}
			if strings.Join(forms, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("Parse(%q) = %q, want %q", tc.src, forms, tc.want)
			}
		})
	}
	// Positions point at the start of each expression.
	got, err := Parse("a\n  (b\n c)")
	if err != nil {
		t.Fatal(err)
	}
	if got[1].Pos != (Pos{2, 3}) || got[1].List[1].Pos != (Pos{3, 2}) {
		t.Fatalf("positions %v %v, want 2:3 and 3:2", got[1].Pos, got[1].List[1].Pos)
	}
}

func TestPrepare(t *testing.T) {
	bad := []struct{ name, cmds, goal, err string }{
		{"push", "(declare-const x Int)\n  (push 1)", "", `2:3: command "push" is not allowed`},
		{"pop", "(pop 1)", "", `"pop"`},
		{"reset", "(reset)", "", `"reset"`},
		{"exit", "(exit)", "", `"exit"`},
		{"set-option", "(set-option :timeout 1)", "", `"set-option"`},
		{"set-logic", "(set-logic QF_LIA)", "", `"set-logic"`},
		{"check-sat", "(check-sat)", "", `"check-sat"`},
		{"get-model", "(get-model)", "", `"get-model"`},
		{"get-value", "(get-value (x))", "", `"get-value"`},
		{"echo", `(echo "x")`, "", `"echo"`},
		{"include", `(include "/etc/passwd")`, "", `"include"`},
		{"bare atom", "x", "", `expected a command, got "x"`},
		{"empty command", "()", "", "expected a command name"},
		{"list head", "((assert) x)", "", "expected a command name"},
		{"arity", "(declare-const x)", "", "declare-const takes 2 arguments, got 1"},
		{"assert arity", "(assert a b)", "", "assert takes 1 arguments, got 2"},
		{"name not symbol", "(declare-const 3 Int)", "", "needs a symbol name"},
		{"fun params", "(declare-fun f Int Int)", "", "needs a parameter list"},
		{"unbalanced", "(assert (> x 1)", "", "unclosed"},
		{"goal two terms", "(declare-const a Bool)", "a a", "goal must be one term"},
		{"goal command smuggled", "(declare-const a Bool)", "a) (push 1", "goal"},
		{"too big", strings.Repeat(" ", MaxQueryBytes+1), "", "limit"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := prepare(Query{Commands: tc.cmds, Goal: tc.goal})
			if !errors.Is(err, ErrBadQuery) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("prepare error = %v, want ErrBadQuery containing %q", err, tc.err)
			}
		})
	}
	pq, err := prepare(Query{
		Commands: "; a policy\n(declare-const |lev| Real)(declare-fun f (Int) Int)(declare-fun k () Int)\n" +
			"(define-sort Lev () Real)(define-fun cap () Real 2.0)\n(assert (! (<= lev cap) :named cap_ok))",
		Goal: "(not (> k 0))",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "(declare-const |lev| Real)\n(declare-fun f (Int) Int)\n(declare-fun k () Int)\n(define-sort Lev () Real)\n" +
		"(define-fun cap () Real 2.0)\n(assert (! (<= lev cap) :named cap_ok))\n(assert (not (> k 0)))\n"
	if pq.text != want {
		t.Fatalf("text\n%s\nwant\n%s", pq.text, want)
	}
	if strings.Join(pq.values, ",") != "k,lev" {
		t.Fatalf("values %q, want [k lev]", pq.values)
	}
	if _, err := prepare(Query{Commands: "(declare-const a Int)", Values: []string{"(a)"}}); !errors.Is(err, ErrBadQuery) {
		t.Fatalf("non-symbol value: %v, want ErrBadQuery", err)
	}
}

// FuzzParse: the reader never panics, and what it prints parses back to
// the same text (so the solver sees what was checked).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"(assert (! (<= lev 2.0) :named cap))", `(= s "a""b")`, "(|a b| ; c\n d)", "((((", "))", `"`, "|", ";",
		"(declare-fun f (Int) Int)", "#x0f (- 3) :k", "\xff", "(a \x00)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		got, err := Parse(src)
		_, _ = prepare(Query{Commands: src, Goal: src, Values: []string{src}})
		if err != nil {
			return
		}
		var b strings.Builder
		for _, s := range got {
			b.WriteString(s.String())
			b.WriteByte('\n')
		}
		again, err := Parse(b.String())
		if err != nil {
			t.Fatalf("printed form %q does not parse: %v", b.String(), err)
		}
		var b2 strings.Builder
		for _, s := range again {
			b2.WriteString(s.String())
			b2.WriteByte('\n')
		}
		if b.String() != b2.String() {
			t.Fatalf("print/parse not stable: %q vs %q", b.String(), b2.String())
		}
	})
}
