package contract_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/contract"
)

// paramSpec writes a parameter schema as the fuzzer mutates it:
// "name:type,name:type".
func paramSpec(ps []contract.Param) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.Name + ":" + p.Type
	}
	return strings.Join(parts, ",")
}

func parseParamSpec(s string) []contract.Param {
	var out []contract.Param
	for part := range strings.SplitSeq(s, ",") {
		name, typ, ok := strings.Cut(part, ":")
		if ok && len(out) < 16 {
			out = append(out, contract.Param{Name: name, Type: typ})
		}
	}
	return out
}

// FuzzDecode: Decode never panics; what it decodes, Check judges the same
// way; a contract that checks clean compiles, and every clause evaluates
// on an empty state and on a full one without panicking, naming itself
// and failing (with its message) whenever a fact it needs is missing.
func FuzzDecode(f *testing.F) {
	for _, e := range catalogContracts(f) {
		raw, err := json.Marshal(e.Sem.Contract)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, e.Kind, paramSpec(e.params()))
	}
	for _, seed := range []struct{ doc, kind, params string }{
		{`{"pre":[{"name":"a","expr":"data.rows >","message":"m"}]}`, "family", ""},
		{`{"post":[{"name":"a","expr":"true","message":"m"}]}`, "operation", ""},
		{`{"pre":[{"name":"a","expr":"data.columns.all(x, data.columns.all(y, x != y))","message":"m"}]}`, "family", ""},
		{`{"pre":[{"name":"a","expr":"params.x / params.y > 1","message":"m"}]}`, "family", "x:int,y:int"},
		{`{"pre":[{"name":"a","expr":"params.x.matches(params.y)","message":"m"}]}`, "signal", "x:string,y:column"},
		{`{"post":[{"name":"a","expr":"math.isFinite(result.score) || result.score > 1.0","message":"m"}]}`, "metric", "p:float"},
		{`{"pre":[{"name":"a","expr":"true","message":"m"}]}]`, "family", ""},
		{`null`, "family", ""},
		{`{"pre":[{"name":"a","expr":"1","message":"m"}]}`, "recipe", "q:bogus"},
	} {
		f.Add([]byte(seed.doc), seed.kind, seed.params)
	}
	full := realisticState()
	f.Fuzz(func(t *testing.T, data []byte, kind, spec string) {
		params := parseParamSpec(spec)
		c, problems, err := contract.Decode(data, kind, params)
		if err != nil {
			if c != nil || problems != nil {
				t.Fatalf("Decode failed (%v) and returned %+v, %+v", err, c, problems)
			}
			return
		}
		if again := contract.Check(c, kind, params); !slices.Equal(again, problems) {
			t.Fatalf("Check is not deterministic: %+v then %+v", problems, again)
		}
		for _, p := range problems {
			if !strings.HasPrefix(p.Field, "pre") && !strings.HasPrefix(p.Field, "post") || p.Problem == "" {
				t.Fatalf("problem %+v", p)
			}
		}
		if len(problems) > 0 {
			return
		}
		prog, err := contract.Compile(c, kind, params)
		if err != nil {
			t.Fatalf("checks clean but does not compile: %v", err)
		}
		for _, ph := range []contract.Phase{contract.Pre, contract.Post} {
			compiled := prog.Clauses(ph)
			if len(compiled) != len(c.Clauses(ph)) {
				t.Fatalf("%s: %d clauses compiled of %d", ph, len(compiled), len(c.Clauses(ph)))
			}
			for i, k := range compiled {
				for _, st := range []contract.State{{}, full} {
					v := k.Eval("FUZZ", st)
					if v.Capability != "FUZZ" || v.Phase != ph || v.Clause != c.Clauses(ph)[i].Name || len(v.Values) != map[bool]int{true: 0, false: len(k.Reads)}[v.Holds] {
						t.Fatalf("verdict %+v for clause %+v", v, k.Clause)
					}
					if !v.Holds && v.Message != k.Clause.Message {
						t.Fatalf("failing verdict without the clause's message: %+v", v)
					}
					if v.Error != "" && v.Holds {
						t.Fatalf("a clause that could not be evaluated holds: %+v", v)
					}
					_ = v.Describe("F9")
				}
			}
			_ = prog.Eval("FUZZ", ph, contract.State{}, nil)
		}
	})
}

// FuzzExpr mutates one clause's expression directly, which reaches far
// more of CEL than mutating JSON does. An expression that checks clean
// compiles, and evaluates quickly (the cost limit holds) on an empty
// state, a realistic one and one whose lists and maps are far larger than
// the static estimate assumes.
func FuzzExpr(f *testing.F) {
	for _, e := range catalogContracts(f) {
		for _, ph := range []contract.Phase{contract.Pre, contract.Post} {
			for _, k := range e.Sem.Contract.Clauses(ph) {
				f.Add(k.Expr, e.Kind, ph == contract.Post)
			}
		}
	}
	f.Add("data.columns.all(c, data.na_share[c] < 1.0)", "family", false)
	f.Add("data.columns.map(c, c + c).exists(x, x.size() > 3)", "family", false)
	f.Add("request.data.matches('^(a+)+$')", "family", false)
	f.Add("math.greatest(data.rows, 3) == data.rows", "family", false)
	f.Add("data.first_date.split('-').size() == 3", "metric", true)
	f.Add("[1, 2, 3].map(x, x * data.rows).all(y, y > 0)", "operation", false)

	big := realisticState()
	cols := make([]string, 50_000)
	na := make(map[string]float64, len(cols))
	for i := range cols {
		cols[i] = "column_" + strings.Repeat("x", i%300)
		na[cols[i]] = 0.5
	}
	big["data.columns"], big["data.tradable_columns"], big["result.assets"], big["data.na_share"] = cols, cols, cols, na
	big["request.data"] = strings.Repeat("a", 100_000) + "!"
	full := realisticState()
	f.Fuzz(func(t *testing.T, expr, kind string, isPost bool) {
		c := &contract.Contract{}
		k := contract.Clause{Name: "fuzzed", Expr: expr, Message: "m"}
		ph := contract.Pre
		if isPost {
			ph, c.Post = contract.Post, []contract.Clause{k}
		} else {
			c.Pre = []contract.Clause{k}
		}
		params := carryParams
		if ps := contract.Check(c, kind, params); ps != nil {
			return
		}
		prog, err := contract.Compile(c, kind, params)
		if err != nil {
			t.Fatalf("checks clean but does not compile: %v", err)
		}
		compiled := prog.Clauses(ph)[0]
		for _, st := range []contract.State{{}, full, big} {
			start := time.Now()
			v := compiled.Eval("FUZZ", st)
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("%q took %v: the cost limit does not bound it (verdict %+v)", expr, d, v)
			}
			if v.Error != "" && v.Holds {
				t.Fatalf("a clause that could not be evaluated holds: %+v", v)
			}
		}
	})
}

// FuzzDecodeSession: a session's state and facts decode to a session or an
// error, never a panic; a clause over read() and the session keys then
// evaluates to a verdict.
func FuzzDecodeSession(f *testing.F) {
	f.Add([]byte(sessionState), []byte(`{"cancel_reason": "health"}`), `{"reservation_id": "ZFA04Y"}`)
	f.Add([]byte(`{}`), []byte(nil), `{}`)
	f.Add([]byte(`{"results": {"u.t": {"": 1}}}`), []byte(`{"a": [1, {"b": null}]}`), `null`)
	f.Add([]byte(`{"a":1,"A":2}`), []byte(`{"a":1,"a":2}`), `[1]`)
	p, err := contract.Compile(&contract.Contract{Pre: []contract.Clause{
		{Name: "r", Expr: `read("airline.get_reservation_details", arguments).cabin == "economy" || facts.x == 1`, Message: "m"},
		{Name: "s", Expr: `size(state) >= 0 && now > timestamp("2000-01-01T00:00:00Z")`, Message: "m"},
	}}, contract.ToolKind, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, state, facts []byte, args string) {
		s, err := contract.DecodeSession(state, facts, time.Unix(1e9, 0))
		if err != nil {
			if s != nil {
				t.Fatalf("error %v with a session", err)
			}
			return
		}
		st, err := contract.ToolStateIn("airline.cancel_reservation", []byte(args), nil, s)
		if err != nil {
			return
		}
		for _, v := range p.Eval("FUZZ", contract.Pre, st, nil) {
			if v.Holds && (v.Error != "" || v.Next != nil) {
				t.Fatalf("%+v", v)
			}
			_ = v.Describe("F9")
		}
	})
}
