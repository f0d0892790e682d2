package contract_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/contract"
)

// sessionState is a session's state holding one reservation, as the
// session package writes it (RFC 8785).
const sessionState = `{"latest":{"airline.get_reservation_details":{"arguments":{"reservation_id":"ZFA04Y"},"result":{"cabin":"economy","created_at":"2024-05-14T09:00:00","insurance":"no","reservation_id":"ZFA04Y"}}},"results":{"airline.get_reservation_details":{"reservation_id=ZFA04Y":{"cabin":"economy","created_at":"2024-05-14T09:00:00","insurance":"no","reservation_id":"ZFA04Y"}}},"version":"groundgate.session-state/v1"}`

// A tool's clauses read the session: state through read(), facts and now.
func TestSessionClauses(t *testing.T) {
	now := time.Date(2024, 5, 14, 20, 0, 0, 0, time.UTC) // 15:00 -05:00
	s, err := contract.DecodeSession([]byte(sessionState), []byte(`{"cancel_reason": "health"}`), now)
	if err != nil {
		t.Fatal(err)
	}
	const res = `read("airline.get_reservation_details", {"reservation_id": arguments.reservation_id})`
	for _, tc := range []struct {
		name, args, expr string
		sess             *contract.Session
		holds            bool
		err              string
		next             string // the canonical arguments of the call named
	}{
		{"read a result", `{"reservation_id": "ZFA04Y"}`, res + `.cabin == "economy"`, s, true, "", ""},
		{"read with the arguments map", `{"reservation_id": "ZFA04Y"}`, `read("airline.get_reservation_details", arguments).insurance == "no"`, s, true, "", ""},
		{"read a result, fails", `{"reservation_id": "ZFA04Y"}`, res + `.cabin == "business"`, s, false, "", ""},
		{"missing read names the call", `{"reservation_id": "AAAAAA"}`, res + `.cabin == "economy"`, s, false,
			`the session's state has no result of airline.get_reservation_details {"reservation_id":"AAAAAA"}: call it first`, `{"reservation_id":"AAAAAA"}`},
		{"missing read outside a session", `{"reservation_id": "ZFA04Y"}`, res + `.cabin == "economy"`, nil, false, "call it first", `{"reservation_id":"ZFA04Y"}`},
		{"read of another tool", `{}`, `read("airline.get_user_details", {"user_id": "u1", "n": 5}) != null`, s, false, "call it first", `{"n":5,"user_id":"u1"}`},
		{"within 24 h", `{"reservation_id": "ZFA04Y"}`, `now - timestamp(` + res + `.created_at + "-05:00") < duration("24h")`, s, true, "", ""},
		{"past 24 h", `{"reservation_id": "ZFA04Y"}`, `now - timestamp(` + res + `.created_at + "-05:00") < duration("1h")`, s, false, "", ""},
		{"now absent outside a session", `{}`, `now > timestamp("2000-01-01T00:00:00Z")`, nil, false, "no such attribute", ""},
		{"facts", `{}`, `facts.cancel_reason == "health"`, s, true, "", ""},
		{"facts {} outside a session", `{}`, `!has(facts.cancel_reason) && size(state) == 0`, nil, true, "", ""},
		{"state directly", `{}`, `state.latest["airline.get_reservation_details"].result.cabin == "economy"`, s, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := contract.Compile(&contract.Contract{Pre: []contract.Clause{cl("rule", tc.expr)}}, toolKind, nil)
			if err != nil {
				t.Fatal(err)
			}
			st, err := contract.ToolStateIn("airline.cancel_reservation", []byte(tc.args), nil, tc.sess)
			if err != nil {
				t.Fatal(err)
			}
			v := p.Pre[0].Eval("airline.cancel_reservation", st)
			if v.Holds != tc.holds || !strings.Contains(v.Error, tc.err) || (tc.err == "") != (v.Error == "") {
				t.Fatalf("verdict %+v; want holds %v, error %q", v, tc.holds, tc.err)
			}
			switch {
			case tc.next == "" && v.Next != nil:
				t.Fatalf("next %+v, want none", v.Next)
			case tc.next != "" && (v.Next == nil || string(v.Next.Arguments) != tc.next || v.Next.Tool == ""):
				t.Fatalf("next %+v, want %s", v.Next, tc.next)
			}
			if v.Next != nil {
				raw, _ := json.Marshal(v)
				if !strings.Contains(string(raw), `"next":{"tool":"`) {
					t.Fatalf("verdict JSON %s", raw)
				}
			}
		})
	}
}

// read and the session keys compile in both phases of a tool's clauses
// only; a derived value's expression reads the pre-state.
func TestSessionCompile(t *testing.T) {
	for _, ph := range []contract.Phase{contract.Pre, contract.Post} {
		c := &contract.Contract{}
		k := []contract.Clause{cl("r", `read("u.t", {}).x == 1 && size(facts) >= 0 && now > timestamp("2000-01-01T00:00:00Z")`)}
		if ph == contract.Pre {
			c.Pre = k
		} else {
			c.Post = k
		}
		if p := contract.Check(c, toolKind, nil); p != nil {
			t.Fatalf("%s: %+v", ph, p)
		}
	}
	if p := contract.Check(&contract.Contract{Pre: []contract.Clause{cl("r", `read("u.t", {}) == 1`)}}, "family", nil); p == nil {
		t.Fatal("read() compiles in a family's clause")
	}
	for _, tc := range []struct{ expr, typ, err string }{
		{`1 + 2`, "int", ""},
		{`read("u.t", arguments).price`, "dyn", ""},
		{`now`, "", "evaluated to a google.protobuf.Timestamp"},
		{`result.isError`, "", "undeclared reference to 'result'"},
		{`state.all(k, true)`, "", "iterates over a map"},
		{`[1, 2`, "", "does not compile"},
	} {
		e, err := contract.CompileCallExpr(tc.expr)
		if err != nil {
			if tc.err == "" || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%s: %v", tc.expr, err)
			}
			continue
		}
		if tc.typ != "" && e.Type.String() != tc.typ {
			t.Fatalf("%s: type %s, want %s", tc.expr, e.Type, tc.typ)
		}
		if tc.err != "" {
			st, _ := contract.ToolStateIn("u.t", nil, nil, &contract.Session{Now: time.Unix(1, 0)})
			if _, err := e.Eval(st); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%s: %v, want %q", tc.expr, err, tc.err)
			}
		}
	}
	e, err := contract.CompileCallExpr(`read("u.t", {"id": arguments.id})`)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := contract.ToolStateIn("u.t", []byte(`{"id": 7}`), nil, nil)
	_, err = e.Eval(st)
	if n := contract.NextCall(err); n == nil || n.Tool != "u.t" || string(n.Arguments) != `{"id":7}` {
		t.Fatalf("next %+v of %v", n, err)
	}
}

// The session's documents are checked: objects, JSON, the facts' strict
// syntax; a state's members may differ in case.
func TestDecodeSession(t *testing.T) {
	if _, err := contract.DecodeSession([]byte(`{"a":1,"A":2}`), nil, time.Time{}); err != nil {
		t.Fatalf("case-differing members in a state: %v", err)
	}
	for _, tc := range []struct{ state, facts, want string }{
		{`[1]`, ``, "state: not a JSON object"},
		{`{"a":`, ``, "state"},
		{`{}`, `[1]`, "facts: not a JSON object"},
		{`{}`, `{"a":1,"a":2}`, "facts"},
		{`{} {}`, ``, "trailing data"},
	} {
		if _, err := contract.DecodeSession([]byte(tc.state), []byte(tc.facts), time.Time{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want %q", tc.state, tc.facts, err, tc.want)
		}
	}
	c := contract.NewSessionCache(2)
	a, err := c.Decode([]byte(sessionState), nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Decode([]byte(sessionState), nil, time.Time{})
	if a.State["version"] != "groundgate.session-state/v1" || len(b.State) != len(a.State) {
		t.Fatalf("%+v %+v", a, b)
	}
}

// A session's state is read lazily: its results decode when a clause reads
// them, to the values a whole decode gives; a document of another shape is
// decoded whole.
func TestSessionLazyState(t *testing.T) {
	lazy, err := contract.DecodeSession([]byte(sessionState), nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := contract.Compile(&contract.Contract{Pre: []contract.Clause{cl("r",
		`state.results["airline.get_reservation_details"]["reservation_id=ZFA04Y"] == read("airline.get_reservation_details", arguments) && state.latest["airline.get_reservation_details"].arguments == arguments && state.version == "groundgate.session-state/v1"`)}}, toolKind, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := contract.ToolStateIn("u.t", []byte(`{"reservation_id": "ZFA04Y"}`), nil, lazy)
	if v := p.Pre[0].Eval("u.t", st); !v.Holds {
		t.Fatalf("%+v", v)
	}
	if f := contract.Format(lazy.State); !strings.Contains(f, `"cabin": "economy"`) {
		t.Fatalf("formatted %s", f)
	}
	for _, other := range []string{
		`{"latest":{},"results":{},"version":"v","extra":1}`,
		`{"latest":{"t":{"arguments":{}}},"results":{},"version":"v"}`,
		`{"latest":{},"results":{},"version":1}`,
		`{"latest":{},"latest":{},"results":{},"version":"v"}`,
	} {
		s, err := contract.DecodeSession([]byte(other), nil, time.Time{})
		if err != nil || len(s.State) < 3 {
			t.Fatalf("%s: %+v %v", other, s, err)
		}
	}
}
