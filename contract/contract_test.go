package contract_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/groundgate/groundgate/contract"
)

// The parameter schemas of the catalog's families, as the registry
// declares them to the contract schema.
var (
	momParams = []contract.Param{
		{Name: "window", Type: "int"}, {Name: "risk_window", Type: "int"},
		{Name: "leverage", Type: "float"}, {Name: "target_vol", Type: "float"}, {Name: "lag", Type: "int"},
	}
	carryParams = append([]contract.Param{{Name: "front", Type: "column"}, {Name: "next", Type: "column"}, {Name: "label", Type: "string"}}, momParams...)
)

func cl(name, expr string) contract.Clause {
	return contract.Clause{Name: name, Expr: expr, Message: "what " + name + " means"}
}

func pre(cs ...contract.Clause) *contract.Contract  { return &contract.Contract{Pre: cs} }
func post(cs ...contract.Clause) *contract.Contract { return &contract.Contract{Post: cs} }

// Every bad contract is refused, with one problem that names the field
// (the JSON path inside the contract) and the clause, and says what is
// wrong; an expression that Check refuses does not Compile either.
func TestCheckRefusesBadContracts(t *testing.T) {
	ok := cl("covers", "data.rows > params.window")
	many := make([]contract.Clause, contract.MaxClauses+1)
	for i := range many {
		many[i] = cl(fmt.Sprintf("c%d", i), "data.rows > 0")
	}
	long := "data.rows > 0" + strings.Repeat(" && data.rows > 0", contract.MaxExprLen/16)
	for _, tc := range []struct {
		name   string
		kind   string
		params []contract.Param
		c      *contract.Contract
		field  string
		clause string
		want   string
	}{
		{"syntax error", "family", momParams, pre(ok, cl("broken", "data.rows >")), "pre[1].expr", "broken", "Syntax error"},
		{"unbalanced", "family", momParams, pre(cl("broken", "(data.rows > 1")), "pre[0].expr", "broken", "Syntax error"},
		{"unknown state key", "family", momParams, pre(cl("volume", "data.volume > 0")), "pre[0].expr", "volume", "undeclared reference to 'data.volume'"},
		{"unknown parameter", "family", momParams, pre(cl("speed", "params.speed > 1")), "pre[0].expr", "speed", "undeclared reference to 'params'"},
		{"unknown root", "family", momParams, pre(cl("registry", "registry.version > 1")), "pre[0].expr", "registry", "undeclared reference"},
		{"int vs string", "family", momParams, pre(cl("typed", "data.rows == 'many'")), "pre[0].expr", "typed", "found no matching overload for '_==_' applied to '(int, string)'"},
		{"string vs int", "family", momParams, pre(cl("dated", "data.first_date > 19830330")), "pre[0].expr", "dated", "no matching overload"},
		{"int param vs string", "family", momParams, pre(cl("window_named", "params.window == 'fifty'")), "pre[0].expr", "window_named", "no matching overload"},
		{"column param vs int", "family", carryParams, pre(cl("front_number", "params.front > 1")), "pre[0].expr", "front_number", "no matching overload"},
		{"int + double arithmetic", "family", momParams, pre(cl("mixed", "data.rows + 0.5 > 1.0")), "pre[0].expr", "mixed", "no matching overload for '_+_'"},
		// Ordering compares across int and double; equality does not.
		{"int == double", "family", momParams, pre(cl("exact", "data.rows == 10.0")), "pre[0].expr", "exact", "found no matching overload for '_==_' applied to '(int, double)'"},
		{"double == int", "family", momParams, post(cl("finite", "result.finite_share == 1")), "post[0].expr", "finite", "applied to '(double, int)'"},
		{"isFinite of an int", "family", momParams, pre(cl("finite", "math.isFinite(data.rows)")), "pre[0].expr", "finite", "no matching overload for 'math.isFinite'"},
		// State keys are variables with dots in their names, not fields.
		{"has() on a key", "family", momParams, pre(cl("present", "has(data.rows)")), "pre[0].expr", "present", "undeclared reference to 'data'"},
		{"list is not a number", "family", momParams, pre(cl("listy", "data.columns > 1")), "pre[0].expr", "listy", "no matching overload"},
		{"non-boolean int", "family", momParams, pre(cl("count", "data.rows + 1")), "pre[0].expr", "count", "is a int, not a bool"},
		{"non-boolean string", "family", momParams, pre(cl("named", "request.family")), "pre[0].expr", "named", "not a bool"},
		{"non-boolean list", "metric", nil, post(cl("listed", "result.assets")), "post[0].expr", "listed", "not a bool"},
		{"cost-limit breaker", "family", momParams, pre(cl("quadratic", "data.columns.all(a, data.columns.all(b, data.columns.all(c, a != b || b != c)))")), "pre[0].expr", "quadratic", "worst-case cost"},
		{"nested comprehension over the map", "family", momParams, pre(cl("pairs", "data.na_share.all(a, data.columns.exists(b, b == a))")), "pre[0].expr", "pairs", "iterates over a map"},
		{"a loop over a map: its order is not fixed", "family", momParams, pre(cl("first", "data.na_share.map(k, k)[0] == 'c00'")), "pre[0].expr", "first", "iterates over a map"},
		{"exists over a map", "family", momParams, pre(cl("any", "data.na_share.exists(k, data.na_share[k] > 0.5)")), "pre[0].expr", "any", "iterates over a map"},
		{"a metric has no parameters of its own", "metric", []contract.Param{{Name: "min_days", Type: "int"}}, pre(cl("days", "result.pnl_rows >= params.min_days")), "pre[0].expr", "days", "undeclared reference"},
		// Strings are priced at 256 bytes and lists at 4096 elements: a
		// comparison with a parameter per column is over the limit, the
		// equivalent membership test is not (TestCheckAcceptsGoodContracts).
		{"string comparison per column", "family", carryParams, pre(cl("scan", "data.columns.exists(c, c == params.front)")), "pre[0].expr", "scan", "worst-case cost 131074 exceeds"},
		{"string function per column", "family", carryParams, pre(cl("scan", "data.columns.exists(c, c.lowerAscii() == 'wti')")), "pre[0].expr", "scan", "worst-case cost"},
		{"result in a family pre", "family", momParams, pre(cl("early", "result.pnl_rows > 0")), "pre[0].expr", "early", "pre clauses of a family may read request, data)"},
		{"result in an operation pre", "operation", []contract.Param{{Name: "window", Type: "int"}}, pre(cl("early", "result.rows > params.window")), "pre[0].expr", "early", "undeclared reference"},
		{"score in a family post", "family", momParams, post(cl("scored", "result.score > 0.0")), "post[0].expr", "scored", "undeclared reference to 'result.score'"},
		{"score in a metric pre", "metric", nil, pre(cl("scored", "math.isFinite(result.score)")), "pre[0].expr", "scored", "undeclared reference to 'result.score'"},
		{"evaluation rows in a metric pre", "metric", nil, pre(cl("window", "result.evaluation_rows > 20")), "pre[0].expr", "window", "undeclared reference"},
		{"post on an operation", "operation", []contract.Param{{Name: "window", Type: "int"}}, post(cl("after", "data.rows > 0")), "post[0].expr", "after", "postconditions are for families and metrics"},
		{"post on a signal", "signal", nil, post(cl("after", "true")), "post[0].expr", "after", "postconditions are for families and metrics"},
		{"post on a recipe", "recipe", nil, post(cl("after", "true")), "post[0].expr", "after", "postconditions are for families and metrics"},
		{"empty message", "family", momParams, pre(contract.Clause{Name: "quiet", Expr: "data.rows > 0"}), "pre[0].message", "quiet", "must not be empty"},
		{"blank message", "family", momParams, pre(contract.Clause{Name: "quiet", Expr: "data.rows > 0", Message: " \n\t"}), "pre[0].message", "quiet", "must not be empty"},
		{"long message", "family", momParams, pre(contract.Clause{Name: "chatty", Expr: "data.rows > 0", Message: strings.Repeat("x", contract.MaxMessageLen+1)}), "pre[0].message", "chatty", "longer than 512 bytes"},
		{"duplicate across phases", "family", momParams, &contract.Contract{Pre: []contract.Clause{ok}, Post: []contract.Clause{cl("covers", "result.rows > 0")}}, "post[0].name", "covers", `duplicate clause name "covers"`},
		{"duplicate in a phase", "family", momParams, pre(ok, cl("tradable", "data.assets > 0"), ok), "pre[2].name", "covers", "duplicate"},
		{"upper-case name", "family", momParams, pre(cl("Covers", "data.rows > 0")), "pre[0].name", "Covers", "lower-case letters"},
		{"name with a dash", "family", momParams, pre(cl("covers-window", "data.rows > 0")), "pre[0].name", "covers-window", "lower-case letters"},
		{"name starting with a digit", "family", momParams, pre(cl("2covers", "data.rows > 0")), "pre[0].name", "2covers", "starting with a letter"},
		{"empty name", "family", momParams, pre(contract.Clause{Expr: "data.rows > 0", Message: "m"}), "pre[0].name", "", "lower-case letters"},
		{"long name", "family", momParams, pre(cl("c"+strings.Repeat("x", contract.MaxNameLen), "data.rows > 0")), "pre[0].name", "c" + strings.Repeat("x", contract.MaxNameLen), "at most 64 bytes"},
		{"too many clauses", "family", momParams, pre(many...), "pre", "", "33 clauses, at most 32"},
		{"too many post clauses", "metric", nil, &contract.Contract{Post: many}, "post", "", "33 clauses, at most 32"},
		{"too long expression", "family", momParams, pre(cl("verbose", long)), "pre[0].expr", "verbose", "longer than 2048 bytes"},
		{"empty expression", "family", momParams, pre(cl("blank", "  ")), "pre[0].expr", "blank", "the expression is empty"},
		{"unknown function", "family", momParams, pre(cl("fancy", "data.rows.between(1, 2)")), "pre[0].expr", "fancy", "undeclared reference"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := contract.Check(tc.c, tc.kind, tc.params)
			if len(ps) != 1 {
				t.Fatalf("%d problems, want 1: %+v", len(ps), ps)
			}
			p := ps[0]
			if p.Field != tc.field || p.Clause != tc.clause || !strings.Contains(p.Problem, tc.want) {
				t.Fatalf("problem %+v\nwant field %q, clause %q, problem containing %q", p, tc.field, tc.clause, tc.want)
			}
			if strings.Contains(p.Problem, "\n") {
				t.Errorf("a problem spans lines: %q", p.Problem)
			}
			// Decode refuses the same document with the same problem.
			raw, err := json.Marshal(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			_, dps, err := contract.Decode(raw, tc.kind, tc.params)
			if err != nil || !slices.Equal(dps, ps) {
				t.Errorf("Decode: %+v, %v; Check: %+v", dps, err, ps)
			}
			// Compile speaks for the expressions only; it refuses those
			// Check refuses, naming the clause.
			_, err = contract.Compile(tc.c, tc.kind, tc.params)
			if strings.HasSuffix(tc.field, ".expr") && tc.want != "longer than 2048 bytes" {
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.clause)) {
					t.Errorf("Compile = %v, want an error naming %q", err, tc.clause)
				}
			}
		})
	}
}

// Check reports every problem of a contract, in clause order, not the
// first one only.
func TestCheckReportsEveryProblem(t *testing.T) {
	c := &contract.Contract{
		Pre: []contract.Clause{
			cl("fine", "data.rows > params.window"),
			{Name: "Bad", Expr: "data.nope > 1"},
			cl("fine", "data.rows >"),
		},
		Post: []contract.Clause{cl("scored", "result.score > 0.0")},
	}
	var got []string
	for _, p := range contract.Check(c, "family", momParams) {
		got = append(got, p.Field+" "+p.Clause)
	}
	want := []string{"pre[1].name Bad", "pre[1].message Bad", "pre[1].expr Bad", "pre[2].name fine", "pre[2].expr fine", "post[0].expr scored"}
	if !slices.Equal(got, want) {
		t.Fatalf("problems %q\nwant %q", got, want)
	}
}

// Sound contracts of every kind and phase check clean and compile, each
// clause into its phase.
func TestCheckAcceptsGoodContracts(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		params []contract.Param
		ph     contract.Phase
		exprs  []string
	}{
		{"family", momParams, contract.Pre, []string{
			"request.family == 'MOM_WZS' && request.metric != '' && request.data.endsWith('.csv')",
			"params.leverage > 0.0",
			"data.rows > params.window + params.lag",
			"data.rows > 2.5",              // int against double: numeric comparison across types
			"data.rows > params.leverage",  // int state key against a float parameter
			"params.leverage <= data.rows", // and the other way round
			"size(data.tradable_columns) > 0 && data.assets == size(data.columns)",
			"data.max_gap_days <= 92 && data.span_days >= 365",
			"data.first_date < data.last_date && data.first_date.matches('^[0-9]{4}-')",
			"data.columns.all(c, data.na_share[c] < 1.0)",
			"data.columns.exists(c, c.startsWith('W')) && data.columns.exists(c, c == 'WTI')",
			"data.columns.filter(c, data.na_share[c] < 0.5).size() > 1",
			"math.isFinite(data.min_price) && !data.non_positive",
			"size(data.constant_columns) == 0",
			"data.digest.startsWith('blake3:')",
			"double(data.rows) * 0.5 > double(params.window)",
			"params.leverage > 0", // double against an int literal
			"math.isNaN(data.min_price) || math.abs(data.min_price) < 1e6",
			"int(data.first_date.substring(0, 4)) >= 1990",
			"math.isFinite(data.min_price) ? data.min_price > 0.0 : true",
		}},
		{"family", carryParams, contract.Pre, []string{
			"params.front != params.next",
			"params.front in data.columns && params.next in data.columns",
			"!(params.front in data.columns) || data.na_share[params.front] < 1.0",
			"params.label.size() < 10",
		}},
		{"family", momParams, contract.Post, []string{
			"result.pnl_rows > 0",
			"result.finite_share == 1.0",
			"result.max_abs_weight <= params.leverage",
			"result.gross_exposure <= params.leverage * double(size(result.assets))",
			"!(result.signal_min < -1.0 || result.signal_max > 1.0)",
			"result.rows == data.rows && result.assets.all(a, a in data.na_share)",
			"result.turnover < 5.0",
		}},
		{"metric", nil, contract.Pre, []string{"result.pnl_rows >= 20", "result.finite_share == 1.0 && data.rows > 0"}},
		{"metric", nil, contract.Post, []string{"math.isFinite(result.score)", "result.evaluation_rows <= result.rows", "result.score >= -1e9"}},
		{"operation", []contract.Param{{Name: "window", Type: "int"}, {Name: "lo", Type: "float"}, {Name: "hi", Type: "float"}}, contract.Pre, []string{
			"params.window < data.rows", "params.lo <= params.hi",
		}},
		{"signal", []contract.Param{{Name: "name", Type: "column"}}, contract.Pre, []string{"params.name in data.columns"}},
		{"recipe", nil, contract.Pre, []string{"data.assets >= 2"}},
	} {
		t.Run(tc.kind+"_"+string(tc.ph), func(t *testing.T) {
			c := &contract.Contract{}
			for i, e := range tc.exprs {
				k := cl(fmt.Sprintf("c%d", i), e)
				if tc.ph == contract.Pre {
					c.Pre = append(c.Pre, k)
				} else {
					c.Post = append(c.Post, k)
				}
			}
			if ps := contract.Check(c, tc.kind, tc.params); ps != nil {
				t.Fatalf("problems: %+v", ps)
			}
			p, err := contract.Compile(c, tc.kind, tc.params)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Clauses(tc.ph)
			if len(got) != len(tc.exprs) || len(p.Clauses(other(tc.ph))) != 0 {
				t.Fatalf("compiled %d %s and %d other clauses, want %d", len(got), tc.ph, len(p.Clauses(other(tc.ph))), len(tc.exprs))
			}
			for i, k := range got {
				if k.Phase != tc.ph || k.Clause.Expr != tc.exprs[i] {
					t.Errorf("clause %d: %s %q", i, k.Phase, k.Clause.Expr)
				}
			}
		})
	}
	if contract.Check(nil, "family", nil) != nil || contract.Check(&contract.Contract{}, "operation", nil) != nil {
		t.Error("an absent or empty contract has problems")
	}
	if p, err := contract.Compile(nil, "family", nil); err != nil || len(p.Pre)+len(p.Post) != 0 {
		t.Errorf("Compile(nil) = %+v, %v", p, err)
	}
}

func other(ph contract.Phase) contract.Phase {
	if ph == contract.Pre {
		return contract.Post
	}
	return contract.Pre
}

// Every contract of the built-in catalog is sound against its entry's
// kind and parameters, and CARRY's curve clauses are among them.
func TestCatalogContractsCheck(t *testing.T) {
	kinds := map[string]bool{}
	for _, e := range catalogContracts(t) {
		if ps := contract.Check(e.Sem.Contract, e.Kind, e.params()); ps != nil {
			t.Errorf("%s: %+v", e.Name, ps)
		}
		kinds[e.Kind] = true
	}
	for _, k := range []string{"operation", "family", "metric"} {
		if !kinds[k] {
			t.Errorf("no %s in the catalog has a contract", k)
		}
	}
	carry := catalogEntryNamed(t, "CARRY")
	p, err := contract.Compile(carry.Sem.Contract, carry.Kind, carry.params())
	if err != nil {
		t.Fatal(err)
	}
	if v := findClause(t, p.Pre, "distinct_curve_points").Eval("CARRY", contract.State{"params.front": "C1", "params.next": "C1"}); v.Holds {
		t.Errorf("front = next holds: %+v", v)
	}
}

func findClause(t *testing.T, cs []*contract.Compiled, name string) *contract.Compiled {
	t.Helper()
	for _, c := range cs {
		if c.Clause.Name == name {
			return c
		}
	}
	t.Fatalf("no clause %s", name)
	return nil
}

// Decode is strict: unknown fields, wrong shapes and trailing data are
// errors; a decodable document's problems are Check's.
func TestDecode(t *testing.T) {
	for _, bad := range []string{
		``, `[]`, `"pre"`, `{"pre": {}}`, `{"pre": [1]}`,
		`{"pre": [{"name": "a", "expr": "true", "message": "m", "when": "always"}]}`,
		`{"invariant": []}`,
		`{"pre": [{"name": 1, "expr": "true", "message": "m"}]}`,
		`{} {}`, `{} x`, `{}]`, `{}}`,
	} {
		if c, _, err := contract.Decode([]byte(bad), "family", nil); err == nil {
			t.Errorf("Decode(%q) = %+v, want an error", bad, c)
		}
	}
	c, ps, err := contract.Decode([]byte(`{"pre": [{"name": "covers", "expr": "data.rows > params.window", "message": "m"}]} `), "family", momParams)
	if err != nil || ps != nil || len(c.Pre) != 1 || c.Pre[0].Name != "covers" || c.Post != nil {
		t.Fatalf("Decode = %+v, %+v, %v", c, ps, err)
	}
	_, ps, err = contract.Decode([]byte(`{"post": [{"name": "covers", "expr": "data.rows > params.window", "message": "m"}]}`), "operation", momParams)
	if err != nil || len(ps) != 1 || ps[0].Field != "post[0].expr" {
		t.Fatalf("Decode(post on an operation) = %+v, %v", ps, err)
	}
}

// Empty phases are left out of a contract's JSON, so "no clauses" has one
// canonical form whatever the author wrote.
func TestContractJSONOmitsEmptyPhases(t *testing.T) {
	for _, doc := range []string{`{}`, `{"pre": []}`, `{"pre": null, "post": []}`} {
		c, _, err := contract.Decode([]byte(doc), "family", nil)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(c)
		if string(out) != `{}` || !c.Empty() {
			t.Errorf("%s → %s (empty %v)", doc, out, c.Empty())
		}
	}
	var nilC *contract.Contract
	if !nilC.Empty() || nilC.Clauses(contract.Pre) != nil {
		t.Error("a nil contract is not empty")
	}
}

// Reads lists the state keys a clause names (sorted, once each, never a
// comprehension's variable), and RequestOnly is true exactly when all of
// them are request facts: those the gate decides.
func TestReadsAndRequestOnly(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		ph    contract.Phase
		expr  string
		reads []string
		only  bool
	}{
		{"family", contract.Pre, "params.leverage > 0.0", []string{"params.leverage"}, true},
		{"family", contract.Pre, "params.front != params.next && params.front != ''", []string{"params.front", "params.next"}, true},
		{"family", contract.Pre, "request.family == 'CARRY' && request.data != ''", []string{"request.data", "request.family"}, true},
		{"family", contract.Pre, "true", nil, true},
		{"family", contract.Pre, "data.rows > params.window + params.lag", []string{"data.rows", "params.lag", "params.window"}, false},
		{"family", contract.Pre, "params.front in data.columns", []string{"data.columns", "params.front"}, false},
		{"family", contract.Pre, "data.columns.all(c, data.na_share[c] < params.leverage)", []string{"data.columns", "data.na_share", "params.leverage"}, false},
		{"family", contract.Pre, "data.digest != ''", []string{"data.digest"}, false},
		{"family", contract.Post, "result.assets.all(a, a in data.na_share)", []string{"data.na_share", "result.assets"}, false},
		{"family", contract.Post, "result.max_abs_weight <= params.leverage", []string{"params.leverage", "result.max_abs_weight"}, false},
		{"metric", contract.Post, "math.isFinite(result.score) && result.score == result.score", []string{"result.score"}, false},
		{"metric", contract.Pre, "request.metric == 'SRP'", []string{"request.metric"}, true},
	} {
		params := carryParams
		if tc.kind == "metric" {
			params = nil
		}
		c := &contract.Contract{}
		if tc.ph == contract.Pre {
			c.Pre = []contract.Clause{cl("x", tc.expr)}
		} else {
			c.Post = []contract.Clause{cl("x", tc.expr)}
		}
		p, err := contract.Compile(c, tc.kind, params)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		k := p.Clauses(tc.ph)[0]
		if !slices.Equal(k.Reads, tc.reads) || k.RequestOnly != tc.only {
			t.Errorf("%s: reads %q request-only %v, want %q %v", tc.expr, k.Reads, k.RequestOnly, tc.reads, tc.only)
		}
	}
}

func compileOne(t *testing.T, kind string, ph contract.Phase, params []contract.Param, expr string) *contract.Compiled {
	t.Helper()
	c := &contract.Contract{}
	k := contract.Clause{Name: "clause", Expr: expr, Message: "the message"}
	if ph == contract.Pre {
		c.Pre = []contract.Clause{k}
	} else {
		c.Post = []contract.Clause{k}
	}
	p, err := contract.Compile(c, kind, params)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return p.Clauses(ph)[0]
}

// A clause holds, fails, or cannot be evaluated; only the first holds.
// A failure carries the clause's message and the values it read.
func TestEval(t *testing.T) {
	bigColumns := make([]string, 200_000)
	for i := range bigColumns {
		bigColumns[i] = fmt.Sprintf("c%d", i)
	}
	for _, tc := range []struct {
		name  string
		kind  string
		ph    contract.Phase
		expr  string
		st    contract.State
		holds bool
		err   string // a substring of Verdict.Error; "" for none
		vals  []contract.Reading
	}{
		{"holds", "family", contract.Pre, "data.rows > params.window + params.lag",
			contract.State{"data.rows": int64(100), "params.window": int64(50), "params.lag": int64(1)}, true, "",
			[]contract.Reading{{Key: "data.rows", Value: "100"}, {Key: "params.lag", Value: "1"}, {Key: "params.window", Value: "50"}}},
		{"fails", "family", contract.Pre, "data.rows > params.window + params.lag",
			contract.State{"data.rows": int64(50), "params.window": int64(50), "params.lag": int64(1)}, false, "",
			[]contract.Reading{{Key: "data.rows", Value: "50"}, {Key: "params.lag", Value: "1"}, {Key: "params.window", Value: "50"}}},
		{"absent key", "family", contract.Pre, "data.rows > params.window",
			contract.State{"params.window": int64(50)}, false, "no such attribute",
			[]contract.Reading{{Key: "data.rows", Value: "(absent)"}, {Key: "params.window", Value: "50"}}},
		{"absent under a negation", "family", contract.Pre, "!(data.rows > 10)", contract.State{}, false, "no such attribute", nil},
		{"ill-typed fact", "family", contract.Pre, "data.rows > 10",
			contract.State{"data.rows": "many"}, false, "no such overload",
			[]contract.Reading{{Key: "data.rows", Value: `"many"`}}},
		// CEL's && and || are commutative over errors: a side that decides
		// the outcome wins over one that cannot be evaluated.
		{"absent but decided by ||", "family", contract.Pre, "data.rows > 10 || true", contract.State{}, true, "", nil},
		{"absent but decided by &&", "family", contract.Pre, "data.rows > 10 && false", contract.State{}, false, "", nil},
		{"runtime cost limit", "family", contract.Pre, "data.columns.all(c, c != '')",
			contract.State{"data.columns": bigColumns}, false, "cost limit exceeded", nil},
		{"same clause, small data", "family", contract.Pre, "data.columns.all(c, c != '')",
			contract.State{"data.columns": bigColumns[:4096]}, true, "", nil},
		{"nil list", "family", contract.Pre, "size(data.constant_columns) == 0",
			contract.State{"data.constant_columns": []string(nil)}, true, "", nil},
		{"cross-type comparison", "family", contract.Pre, "data.rows > 2.5", contract.State{"data.rows": int64(3)}, true, "", nil},
		{"cross-type comparison fails", "family", contract.Pre, "data.rows > 2.5", contract.State{"data.rows": int64(2)}, false, "", nil},
		{"map lookup", "family", contract.Pre, "data.na_share[params.front] < 1.0",
			contract.State{"data.na_share": map[string]float64{"C1": 1}, "params.front": "C1"}, false, "", nil},
		{"missing map key", "family", contract.Pre, "data.na_share[params.front] < 1.0",
			contract.State{"data.na_share": map[string]float64{"C1": 0}, "params.front": "C9"}, false, "no such key", nil},
		{"finite score", "metric", contract.Post, "math.isFinite(result.score)", contract.State{"result.score": 1.5}, true, "", nil},
		{"NaN score", "metric", contract.Post, "math.isFinite(result.score)", contract.State{"result.score": nan}, false, "",
			[]contract.Reading{{Key: "result.score", Value: "NaN"}}},
		{"infinite score", "metric", contract.Post, "math.isFinite(result.score)", contract.State{"result.score": math.Inf(-1)}, false, "",
			[]contract.Reading{{Key: "result.score", Value: "-Inf"}}},
		{"NaN compares false", "metric", contract.Post, "result.score > -1e300", contract.State{"result.score": nan}, false, "", nil},
		{"NaN is not NaN", "metric", contract.Post, "result.score == result.score", contract.State{"result.score": nan}, false, "", nil},
		{"division by zero", "family", contract.Pre, "data.rows / data.assets > 10",
			contract.State{"data.rows": int64(100), "data.assets": int64(0)}, false, "division by zero", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := carryParams
			if tc.kind == "metric" {
				params = nil
			}
			k := compileOne(t, tc.kind, tc.ph, params, tc.expr)
			v := k.Eval("CAP", tc.st)
			if v.Holds != tc.holds || (tc.err == "") != (v.Error == "") || !strings.Contains(v.Error, tc.err) {
				t.Fatalf("verdict %+v, want holds %v, error containing %q", v, tc.holds, tc.err)
			}
			if v.Capability != "CAP" || v.Phase != tc.ph || v.Clause != "clause" {
				t.Errorf("verdict names %s %s %s", v.Capability, v.Phase, v.Clause)
			}
			if wantMsg := map[bool]string{true: "", false: "the message"}[v.Holds]; v.Message != wantMsg {
				t.Errorf("message %q, want %q", v.Message, wantMsg)
			}
			// The values read are reported with a failure only.
			if want := map[bool]int{true: 0, false: len(k.Reads)}[v.Holds]; len(v.Values) != want {
				t.Errorf("values %+v for reads %q", v.Values, k.Reads)
			}
			if r := k.Readings(tc.st); len(r) != len(k.Reads) {
				t.Errorf("readings %+v for reads %q", r, k.Reads)
			}
			if tc.vals != nil && !slices.Equal(k.Readings(tc.st), tc.vals) {
				t.Errorf("values %+v, want %+v", v.Values, tc.vals)
			}
		})
	}
}

// Program.Eval evaluates one phase in declaration order, the clauses keep
// accepts; Failed keeps those that do not hold.
func TestProgramEval(t *testing.T) {
	carry := catalogEntryNamed(t, "CARRY")
	p, err := contract.Compile(carry.Sem.Contract, carry.Kind, carry.params())
	if err != nil {
		t.Fatal(err)
	}
	st := realisticState()
	all := p.Eval("CARRY", contract.Pre, st, nil)
	if len(all) != len(carry.Sem.Contract.Pre) {
		t.Fatalf("%d verdicts for %d clauses", len(all), len(carry.Sem.Contract.Pre))
	}
	for i, v := range all {
		if v.Clause != carry.Sem.Contract.Pre[i].Name || !v.Holds {
			t.Errorf("verdict %d: %+v", i, v)
		}
	}
	if f := contract.Failed(all); f != nil {
		t.Errorf("Failed of holding verdicts = %+v", f)
	}
	post := p.Eval("CARRY", contract.Post, st, nil)
	if len(post) != len(carry.Sem.Contract.Post) || contract.Failed(post) != nil {
		t.Errorf("post verdicts %+v", post)
	}

	// The gate's view: the request-only clauses, on the request alone.
	st = contract.State{"params.front": "C1", "params.next": "C1", "params.leverage": 0.0, "params.target_vol": 0.1}
	gate := p.Eval("CARRY", contract.Pre, st, func(c *contract.Compiled) bool { return c.RequestOnly })
	var names []string
	for _, v := range gate {
		names = append(names, v.Clause)
	}
	if want := []string{"distinct_curve_points", "positive_leverage", "positive_target_vol"}; !slices.Equal(names, want) {
		t.Fatalf("request-only clauses %q, want %q", names, want)
	}
	names = nil
	for _, v := range contract.Failed(gate) {
		names = append(names, v.Clause)
	}
	if want := []string{"distinct_curve_points", "positive_leverage"}; !slices.Equal(names, want) {
		t.Fatalf("failed %q, want %q", names, want)
	}
	var nilP *contract.Program
	if nilP.Eval("X", contract.Pre, st, nil) != nil || nilP.Clauses(contract.Post) != nil {
		t.Error("a nil program evaluates something")
	}
}

// Describe words a failure for a rejection reason: the code, the phase,
// capability.clause, the message, why it could not be evaluated, and the
// values read.
func TestVerdictDescribe(t *testing.T) {
	k := compileOne(t, "family", contract.Pre, momParams, "data.rows > params.window + params.lag")
	v := k.Eval("MOM_WZS", contract.State{"data.rows": int64(40), "params.window": int64(50), "params.lag": int64(1)})
	if got, want := v.Describe("F9"), "F9 pre MOM_WZS.clause: the message [data.rows=40, params.lag=1, params.window=50]"; got != want {
		t.Errorf("Describe = %q\nwant       %q", got, want)
	}
	v = k.Eval("MOM_WZS", contract.State{"params.window": int64(50), "params.lag": int64(1)})
	if got, want := v.Describe("F9"), "F9 pre MOM_WZS.clause: the message (not evaluable: no such attribute(s): data.rows) [data.rows=(absent), params.lag=1, params.window=50]"; got != want {
		t.Errorf("Describe = %q\nwant       %q", got, want)
	}
	k = compileOne(t, "metric", contract.Post, nil, "false")
	if got, want := k.Eval("SRP", nil).Describe("F10"), "F10 post SRP.clause: the message"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	// JSON: the message and the values read only on failure (values
	// always a list).
	k = compileOne(t, "metric", contract.Post, nil, "math.isFinite(result.score)")
	raw, _ := json.Marshal(k.Eval("SRP", contract.State{"result.score": 0.5}))
	if want := `{"capability":"SRP","phase":"post","clause":"clause","holds":true,"values":[]}`; string(raw) != want {
		t.Errorf("JSON %s\nwant %s", raw, want)
	}
	raw, _ = json.Marshal(k.Eval("SRP", contract.State{"result.score": math.Inf(1)}))
	if want := `{"capability":"SRP","phase":"post","clause":"clause","holds":false,"message":"the message","values":[{"key":"result.score","value":"+Inf"}]}`; string(raw) != want {
		t.Errorf("JSON %s\nwant %s", raw, want)
	}
	raw, _ = json.Marshal(compileOne(t, "metric", contract.Post, nil, "true").Eval("SRP", nil))
	if !strings.Contains(string(raw), `"values":[]`) {
		t.Errorf("JSON %s: values not a list", raw)
	}
}

// Format is deterministic and total: NaN and infinities by name, strings
// quoted, maps by sorted key, long lists and maps cut after eight.
func TestFormat(t *testing.T) {
	ten := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	wide := map[string]float64{}
	for i, k := range ten {
		wide[k] = float64(i)
	}
	for _, tc := range []struct {
		v    any
		want string
	}{
		{nan, "NaN"},
		{math.Inf(1), "+Inf"},
		{math.Inf(-1), "-Inf"},
		{0.1, "0.1"},
		{1.0, "1"},
		{-0.0, "0"},
		{1e21, "1e+21"},
		{5e-324, "5e-324"},
		{int64(-42), "-42"},
		{int64(math.MaxInt64), "9223372036854775807"},
		{"C1", `"C1"`},
		{"a \"b\"\n", `"a \"b\"\n"`},
		{"", `""`},
		{true, "true"},
		{false, "false"},
		{[]string{}, "[]"},
		{[]string(nil), "[]"},
		{[]string{"C1", "C2"}, `["C1", "C2"]`},
		{ten[:8], `["a", "b", "c", "d", "e", "f", "g", "h"]`},
		{ten, `["a", "b", "c", "d", "e", "f", "g", "h", … 2 more]`},
		{map[string]float64{}, "{}"},
		{map[string]float64{"z": 1, "a": nan, "m": math.Inf(1)}, `{"a": NaN, "m": +Inf, "z": 1}`},
		{wide, `{"a": 0, "b": 1, "c": 2, "d": 3, "e": 4, "f": 5, "g": 6, "h": 7, … 2 more}`},
		{3, "3"}, // not a schema type: printed as Go prints it
	} {
		for range 20 { // map order must not show
			if got := contract.Format(tc.v); got != tc.want {
				t.Fatalf("Format(%#v) = %q, want %q", tc.v, got, tc.want)
			}
		}
	}
}

// The cache compiles a capability's contract once: the same identity and
// kind return the same program, whatever contract is passed with them
// (an identity covers its contract). It is bounded and safe for
// concurrent use.
func TestCache(t *testing.T) {
	a := pre(cl("covers", "data.rows > params.window"))
	b := pre(cl("other", "data.rows > 1"))
	c := contract.NewCache(2)
	p1, err := c.Program("id-a", "family", momParams, a)
	if err != nil {
		t.Fatal(err)
	}
	if p2, _ := c.Program("id-a", "family", momParams, b); p2 != p1 {
		t.Fatal("the same identity compiled twice")
	}
	if p3, _ := c.Program("id-a", "operation", momParams, a); p3 == p1 {
		t.Fatal("another kind shares a program")
	}
	// Full (two programs): the next one starts the cache over.
	p4, err := c.Program("id-b", "family", momParams, b)
	if err != nil || p4 == nil || p4.Pre[0].Clause.Name != "other" {
		t.Fatalf("id-b: %+v, %v", p4, err)
	}
	if again, _ := c.Program("id-b", "family", momParams, b); again != p4 {
		t.Fatal("id-b not kept")
	}
	if again, _ := c.Program("id-a", "family", momParams, a); again == p1 {
		t.Fatal("the cache kept more than its bound")
	}

	// An empty contract compiles to an empty program, a bad one to an error
	// that is not kept.
	if p, err := c.Program("id-e", "family", nil, nil); err != nil || p == nil || len(p.Pre)+len(p.Post) != 0 {
		t.Fatalf("empty: %+v, %v", p, err)
	}
	bad := pre(cl("broken", "data.rows >"))
	for range 2 {
		if _, err := c.Program("id-x", "family", nil, bad); err == nil || !strings.Contains(err.Error(), `"broken"`) {
			t.Fatalf("bad contract: %v", err)
		}
	}

	// Concurrent use: every caller gets a program that evaluates.
	c = contract.NewCache(4)
	var wg sync.WaitGroup
	progs := make([]*contract.Program, 16)
	for i := range progs {
		wg.Go(func() {
			p, err := c.Program(fmt.Sprintf("id-%d", i%3), "family", momParams, a)
			if err != nil {
				t.Error(err)
				return
			}
			progs[i] = p
		})
	}
	wg.Wait()
	for i, p := range progs {
		if p == nil || !p.Pre[0].Eval("X", contract.State{"data.rows": int64(9), "params.window": int64(2)}).Holds {
			t.Fatalf("program %d: %+v", i, p)
		}
	}
	if again, _ := c.Program("id-0", "family", momParams, a); again != progs[0] {
		t.Error("after concurrent use, id-0 compiles again")
	}
}

// Keys is the schema: unique names under the four scopes, each with a CEL
// type the compiler knows and a description.
func TestKeys(t *testing.T) {
	seen := map[string]bool{}
	scopes := map[contract.Scope]string{contract.ScopeRequest: "request.", contract.ScopeData: "data.", contract.ScopeResult: "result.", contract.ScopeScore: "result."}
	for _, k := range contract.Keys() {
		if seen[k.Name] {
			t.Errorf("%s twice", k.Name)
		}
		seen[k.Name] = true
		if prefix, ok := scopes[k.Scope]; !ok || !strings.HasPrefix(k.Name, prefix) {
			t.Errorf("%s: scope %q", k.Name, k.Scope)
		}
		if strings.TrimSpace(k.Doc) == "" {
			t.Errorf("%s: no doc", k.Name)
		}
		// Every key is readable, with its declared type, by a metric's
		// postcondition (which sees every scope).
		zero := map[string]string{"int": "0", "double": "0.0", "string": "''", "bool": "false", "list(string)": "[]", "map(string, double)": "{}"}[k.Type]
		if zero == "" {
			t.Errorf("%s: type %q", k.Name, k.Type)
			continue
		}
		expr := fmt.Sprintf("type(%s) == type(%s)", k.Name, zero)
		if ps := contract.Check(post(cl("typed", expr)), "metric", nil); ps != nil {
			t.Errorf("%s: %+v", expr, ps)
		}
	}
	if contract.ParamKey("window") != "params.window" || contract.SchemaVersion != "groundgate.state/v1" {
		t.Error("ParamKey or SchemaVersion changed")
	}
}
