package policy

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/session/statekey"
)

// airlineState is a session's state holding reservations by id, filed as
// airline.get_reservation_details files them.
func airlineState(t testing.TB, res map[string]map[string]any) []byte {
	t.Helper()
	const tool = "airline.get_reservation_details"
	results := map[string]any{}
	var latest any
	for id, r := range res {
		args, _ := json.Marshal(map[string]string{"reservation_id": id})
		k, err := statekey.Key(args)
		if err != nil {
			t.Fatal(err)
		}
		results[k] = r
		latest = map[string]any{"arguments": json.RawMessage(args), "result": r}
	}
	raw, err := hashing.Canonical(map[string]any{"latest": map[string]any{tool: latest}, "results": map[string]any{tool: results}, "version": "groundgate.session-state/v1"})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func airlinePolicies(t testing.TB) []*Compiled {
	t.Helper()
	raw, err := os.ReadFile("testdata/airline.json")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := ParseFile("airline.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func airlineRequest(t testing.TB, id string, state []byte, now time.Time) Request {
	t.Helper()
	s, err := contract.DecodeSession(state, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"reservation_id": id, "reason": "change_of_plan"})
	return Request{Tool: "airline.cancel_reservation", Arguments: args, Session: s}
}

// "Cancel only within 24 h of booking, or business, or insured": derived
// from the reservation the session's state holds, decided by the solver.
func TestDeriveAirline(t *testing.T) {
	cs := airlinePolicies(t)
	if got := cs[0].Derived(); strings.Join(got, ",") != "booked,cabin,insured" || len(cs[0].Unbound()) != 0 || !cs[0].GovernsTool("airline.cancel_reservation") || cs[0].AppliesTo("MOM_WZS", "SRP") {
		t.Fatalf("derived %v, unbound %v", got, cs[0].Unbound())
	}
	state := airlineState(t, map[string]map[string]any{
		"ZFA04Y": {"reservation_id": "ZFA04Y", "cabin": "economy", "insurance": "no", "created_at": "2024-05-14T09:00:00"},
		"BIZ001": {"reservation_id": "BIZ001", "cabin": "business", "insurance": "no", "created_at": "2024-05-01T09:00:00"},
		"INS001": {"reservation_id": "INS001", "cabin": "economy", "insurance": "yes", "created_at": "2024-05-01T09:00:00"},
	})
	soon := time.Date(2024, 5, 14, 20, 0, 0, 0, time.UTC) // 6 h after the booking (14:00Z)
	late := time.Date(2024, 5, 16, 20, 0, 0, 0, time.UTC)
	nextArgs := `{"reservation_id":"NOPE00"}`
	pools := corpusPools(t)
	for _, tc := range []struct {
		name   string
		req    Request
		reason string
		detail string
	}{
		{"within 24 h", airlineRequest(t, "ZFA04Y", state, soon), "", ""},
		{"past 24 h, economy, uninsured", airlineRequest(t, "ZFA04Y", state, late), ReasonViolated, "within_24h_or_business_or_insured"},
		{"business", airlineRequest(t, "BIZ001", state, late), "", ""},
		{"insured", airlineRequest(t, "INS001", state, late), "", ""},
		{"reservation not read", airlineRequest(t, "NOPE00", state, late), ReasonMissing, "call it first"},
		{"outside a session", Request{Tool: "airline.cancel_reservation", Arguments: []byte(`{"reservation_id":"ZFA04Y"}`)}, ReasonMissing, "outside a session"},
	} {
		for _, kind := range solverKinds {
			k := NewChecker(pools[kind], 10*time.Second)
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				rs := chkCheck(t, k, cs, tc.req)
				if tc.reason == "" {
					if len(rs) != 0 {
						t.Fatalf("refused: %+v", rs)
					}
					return
				}
				if len(rs) != 1 || rs[0].Reason != tc.reason || !strings.Contains(rs[0].Detail, tc.detail) {
					t.Fatalf("%+v; want %s saying %q", rs, tc.reason, tc.detail)
				}
				r := rs[0]
				if tc.name == "reservation not read" {
					if r.Next == nil || r.Next.Tool != "airline.get_reservation_details" || string(r.Next.Arguments) != nextArgs {
						t.Fatalf("next %+v", r.Next)
					}
					raw, _ := json.Marshal(r)
					if !strings.Contains(string(raw), `"next":{"tool":"airline.get_reservation_details","arguments":{"reservation_id":"NOPE00"}}`) {
						t.Fatalf("JSON %s", raw)
					}
				} else if r.Next != nil {
					t.Fatalf("next %+v", r.Next)
				}
				if tc.reason == ReasonViolated {
					if r.Field() != "now" || len(r.Witness) != 4 || r.Witness[1].Pointer != "/derive/booked" || r.Witness[2].Value.Str != "economy" {
						t.Fatalf("witness %+v (field %s)", r.Witness, r.Field())
					}
				}
			})
		}
	}
}

// A derived value that does not fit its constant's sort: refused at write
// when its type says so, as type at the check when only the value does.
func TestDeriveSorts(t *testing.T) {
	state := airlineState(t, map[string]map[string]any{"ZFA04Y": {"cabin": "economy", "price": 120.5, "seats": 2}})
	base := func(sort, expr string) Policy {
		return Policy{SMTLIB: "(declare-const x " + sort + ")(declare-const allow Bool)(assert (= allow true))",
			Derive: map[string]string{"x": expr}, Allow: "allow", AppliesTo: []string{"airline.cancel_reservation"}}
	}
	const res = `read('airline.get_reservation_details', {'reservation_id': arguments.reservation_id})`
	for _, tc := range []struct {
		name, sort, expr string
		write, reason    string // the write refusal's words, or the check's reason
	}{
		{"int", "Int", res + ".seats", "", ""},
		{"int as a Real", "Real", res + ".seats", "", ""},
		{"double", "Real", res + ".price", "", ""},
		{"string", "String", res + ".cabin", "", ""},
		{"bool", "Bool", res + ".cabin == 'economy'", "", ""},
		{"a string for an Int", "Int", res + ".cabin", "", ReasonType},
		{"a double for an Int", "Int", res + ".price", "", ReasonType},
		{"a map", "Int", res, "", ReasonType},
		{"static mismatch", "Int", `'x'`, "derive.x: x is declared Int, but the expression is a string", ""},
		{"static double for an Int", "Int", `1.5`, "derive.x: x is declared Int, but the expression is a double", ""},
		{"does not compile", "Int", `arguments.`, "derive.x: does not compile", ""},
		{"reads the result", "Bool", `result.isError`, "derive.x: does not compile", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compile("p", base(tc.sort, tc.expr))
			if tc.write != "" {
				if err == nil || !strings.Contains(err.Error(), tc.write) {
					t.Fatalf("%v; want %q", err, tc.write)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			k := NewChecker(corpusPools(t)["z3"], 10*time.Second)
			rs := chkCheck(t, k, []*Compiled{c}, airlineRequest(t, "ZFA04Y", state, time.Unix(1.7e9, 0)))
			if tc.reason == "" && len(rs) != 0 || tc.reason != "" && (len(rs) != 1 || rs[0].Reason != tc.reason) {
				t.Fatalf("%+v; want %q", rs, tc.reason)
			}
		})
	}
}

// What a policy that derives may say, checked at write.
func TestDeriveCompileRefuses(t *testing.T) {
	ok := Policy{SMTLIB: "(declare-const x Int)(declare-const y Int)(declare-const allow Bool)(assert (= allow (< x y)))",
		Bind: map[string]string{"y": "/arguments/limit"}, Derive: map[string]string{"x": "size(facts)"}, Allow: "allow", AppliesTo: []string{"tool"}}
	if _, err := Compile("p", ok); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(p *Policy)
		want string
	}{
		{"on a family policy", func(p *Policy) { p.Bind = nil; p.AppliesTo = []string{"family"} }, `derive.x: applies_to[0] "family" is not a tool`},
		{"on a family by name", func(p *Policy) { p.Bind = nil; p.AppliesTo = []string{"MOM_WZS"} }, `derive.x: applies_to[0] "MOM_WZS" is not a tool`},
		{"beside a request's field", func(p *Policy) { p.Bind = map[string]string{"y": "/params/window"} }, "derive.x: a derived constant reads a tool call"},
		{"bound too", func(p *Policy) { p.Bind = map[string]string{"x": "/arguments/limit"} }, "derive.x: x is bound to /arguments/limit too"},
		{"undeclared", func(p *Policy) { p.Derive = map[string]string{"z": "1"} }, "derive.z: z is not declared"},
		{"allow", func(p *Policy) { p.Derive = map[string]string{"allow": "true"} }, "derive.allow: allow is what the policy decides"},
		{"too long", func(p *Policy) { p.Derive = map[string]string{"x": strings.Repeat("1 + ", MaxDeriveLen/4) + "1"} }, "derive.x: 2049 bytes, at most 2048"},
		{"not a symbol", func(p *Policy) { p.Derive = map[string]string{"(x": "1"} }, "is not an SMT-LIB symbol"},
		{"too many", func(p *Policy) {
			p.Derive = map[string]string{}
			for i := range MaxDerived + 1 {
				p.Derive[strings.Repeat("v", i+1)] = "1"
			}
		}, "derive: 33 derived constants, at most 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			p.Bind, p.Derive = map[string]string{"y": "/arguments/limit"}, map[string]string{"x": "size(facts)"}
			tc.edit(&p)
			_, err := Compile("p", p)
			var ve *ValidationError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v; want %q", err, tc.want)
			}
		})
	}
}

// The policy file is decoded strictly, derive too; a policy without derive
// keeps its bytes and id, and derive is inside the id.
func TestDeriveDecodeAndID(t *testing.T) {
	for _, bad := range []string{
		`{"smtlib": "(declare-const allow Bool)", "allow": "allow", "applies_to": ["tool"], "derive": {"x": "1", "x": "2"}}`,
		`{"smtlib": "(declare-const allow Bool)", "allow": "allow", "applies_to": ["tool"], "derived": {"x": "1"}}`,
		`{"smtlib": "(declare-const allow Bool)", "allow": "allow", "applies_to": ["tool"], "derive": ["x"]}`,
		`{"smtlib": "(declare-const allow Bool)", "allow": "allow", "applies_to": ["tool"], "derive": {"x": 1}}`,
	} {
		if _, err := Decode("p", []byte(bad)); err == nil {
			t.Errorf("decoded %s", bad)
		}
	}
	p := Policy{SMTLIB: "(declare-const allow Bool)", Allow: "allow", AppliesTo: []string{"tool"}}
	raw, err := hashing.Canonical(p)
	if err != nil || strings.Contains(string(raw), "derive") {
		t.Fatalf("%s %v", raw, err)
	}
	id, _ := p.ID()
	p.Derive = map[string]string{}
	if id2, _ := p.ID(); id2 != id {
		t.Fatal("an empty derive changes the id")
	}
	p.Derive = map[string]string{"x": "1"}
	if id3, _ := p.ID(); id3 == id {
		t.Fatal("derive is not in the id")
	}
	cs := airlinePolicies(t)
	again, err := Compile(cs[0].Name, cs[0].Policy)
	if err != nil || again.ID != cs[0].ID {
		t.Fatalf("%v", err)
	}
}

// Lint and diff read a derived constant as free over its sort.
func TestDeriveLintDiff(t *testing.T) {
	cs := airlinePolicies(t)
	k := NewChecker(corpusPools(t)["z3"], 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reps, err := k.LintSet(ctx, cs)
	if err != nil || len(reps) != 1 || reps[0].Vacuous || reps[0].Tautological || len(reps[0].Unbound) != 0 {
		t.Fatalf("%+v %v", reps, err)
	}
	if _, err := k.Diff(ctx, nil, cs); err != nil {
		t.Fatal(err)
	}
}
