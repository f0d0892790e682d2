package policy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/registry"
)

// grounded is a call to tool grounded by a match of this mode and
// confidence.
func grounded(tool, mode string, confidence float64) Request {
	r := call(tool, `{}`)
	r.Grounding = &Grounding{Mode: mode, Confidence: Num(confidence)}
	return r
}

// exempt is an exempt read of tool.
func exempt(tool string) Request {
	r := call(tool, `{}`)
	g := ExemptGrounding()
	r.Grounding = &g
	return r
}

// destructiveNeedsName is docs/policies.md's example: deleting needs a
// match of confidence at least 0.7 (a name, an alias, a tag), not a
// keyword.
func destructiveNeedsName(t *testing.T) *Compiled {
	t.Helper()
	return toolPolicy(t, "destructive_needs_a_name", `(declare-const tool String) (declare-const confidence Real) (declare-const allow Bool)
		(define-fun destructive () Bool (or (= tool "fs.delete_file") (= tool "shop.delete_all")))
		(assert (! (=> (and allow destructive) (>= confidence 0.7)) :named destructive_needs_confidence_0_7))
		(assert (=> (or (not destructive) (>= confidence 0.7)) allow))`,
		map[string]string{"tool": "/tool", "confidence": "/grounding/confidence"})
}

// The grounding pointers parse, name their field, read Real and String.
func TestParsePointerGrounding(t *testing.T) {
	for _, tc := range []struct {
		text, param, name, sort string
	}{
		{"/grounding/mode", "mode", "grounding.mode", "String"},
		{"/grounding/confidence", "confidence", "grounding.confidence", "Real"},
	} {
		p, err := ParsePointer(tc.text)
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		if p.Field != "grounding" || p.Param != tc.param || !p.ForCall() || !slices.Equal(p.Sorts(), []string{tc.sort}) {
			t.Fatalf("%s: %+v, sorts %v, ForCall %v", tc.text, p, p.Sorts(), p.ForCall())
		}
		if got := FieldName(tc.text); got != tc.name {
			t.Errorf("FieldName(%s) = %q, want %q", tc.text, got, tc.name)
		}
	}
	for _, bad := range []string{"/grounding", "/grounding/", "/grounding/tier", "/grounding/mode/x", "/grounding/Mode", "/grounding~1mode"} {
		if p, err := ParsePointer(bad); err == nil || !strings.Contains(err.Error(), "points to no field") {
			t.Errorf("ParsePointer(%q) = %+v, %v; want an error", bad, p, err)
		}
	}
}

// A policy reads how a call was grounded: the refusal's field is the
// grounding when it comes first in the witness (what an agent changes is
// its words, not the tool). TestToolPolicies decides the grounding
// policies' cases under both solvers.
func TestGroundingRefusalField(t *testing.T) {
	named := destructiveNeedsName(t)
	k := NewChecker(corpusPools(t)["z3"], 10*time.Second)
	rs := chkCheck(t, k, []*Compiled{named}, grounded("fs.delete_file", "keyword", 0.5))
	if len(rs) != 1 || rs[0].Field() != "grounding.confidence" || !slices.Equal(rs[0].Core, []string{"destructive_needs_confidence_0_7"}) {
		t.Fatalf("refusals %+v, want one on grounding.confidence", rs)
	}
}

// The grounding pointers are a call's: a policy binding them governs
// tool calls only, and may not bind a request's field besides.
func TestGroundingPolicyScope(t *testing.T) {
	const body = `(declare-const c Real) (declare-const y Int) (declare-const allow Bool) (assert (=> allow (>= c 0.7)))`
	for _, tc := range []struct {
		name      string
		bind      map[string]string
		appliesTo []string
		field     string // "" compiles
	}{
		{"on the kind tool", map[string]string{"c": "/grounding/confidence"}, []string{"tool"}, ""},
		{"on a tool by name", map[string]string{"c": "/grounding/confidence"}, []string{"fs.delete_file"}, ""},
		{"on the kind family", map[string]string{"c": "/grounding/confidence"}, []string{"family"}, "applies_to[0]"},
		{"with params", map[string]string{"c": "/grounding/confidence", "y": "/params/window"}, []string{"tool"}, "bind.y"},
		{"mode as a Real", map[string]string{"c": "/grounding/mode"}, []string{"tool"}, "bind.c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compile("p", Policy{SMTLIB: body, Bind: tc.bind, Allow: "allow", AppliesTo: tc.appliesTo})
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !c.ForCalls() || c.AppliesTo("MOM_WZS", "SRP") {
					t.Fatalf("ForCalls %v", c.ForCalls())
				}
				return
			}
			var ve *ValidationError
			if err == nil || !errors.As(err, &ve) || !slices.ContainsFunc(ve.Fields, func(f registry.FieldError) bool { return f.Field == tc.field }) {
				t.Fatalf("got %v, want a problem with %s", err, tc.field)
			}
		})
	}
}

// Lint ranges /grounding/confidence over [0, 1] and /grounding/mode over
// the modes: a floor of 0 never refuses, a floor above 1 never admits, a
// mode no match has never admits.
func TestGroundingPolicyLint(t *testing.T) {
	floor := func(name, at string) *Compiled {
		return toolPolicy(t, name, `(declare-const c Real) (declare-const allow Bool)
			(assert (! (=> allow (>= c `+at+`)) :named floor)) (assert (=> (>= c `+at+`) allow))`,
			map[string]string{"c": "/grounding/confidence"})
	}
	mode := toolPolicy(t, "mode_is_unknown", `(declare-const m String) (declare-const allow Bool)
		(assert (! (=> allow (= m "guessed")) :named guessed)) (assert (=> (= m "guessed") allow))`,
		map[string]string{"m": "/grounding/mode"})
	pools := corpusPools(t)
	for _, kind := range solverKinds {
		k := NewChecker(pools[kind], 10*time.Second)
		for _, tc := range []struct {
			policy                *Compiled
			vacuous, tautological bool
		}{
			{floor("floor_0", "0.0"), false, true},
			{floor("floor_0_7", "0.7"), false, false},
			{floor("floor_1", "1.0"), false, false},
			{floor("floor_1_001", "1.001"), true, false},
			{mode, true, false},
		} {
			rep, err := k.Lint(context.Background(), tc.policy, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Vacuous != tc.vacuous || rep.Tautological != tc.tautological || len(rep.Undecided) > 0 {
				t.Errorf("%s: Lint(%s) = %+v, want vacuous %v tautological %v", kind, tc.policy.Name, rep, tc.vacuous, tc.tautological)
			}
		}
	}
}
