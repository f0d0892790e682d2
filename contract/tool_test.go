package contract_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/contract"
)

const toolKind = contract.ToolKind

// A tool's clauses compile against groundgate.call/v1: the call in both
// phases, the result only after it.
func TestToolCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ph    contract.Phase
		expr  string
		want  string // "" when the clause compiles
		reads []string
		only  bool
	}{
		{"path prefix", contract.Pre, `arguments.path.startsWith("/tmp/")`, "", []string{"arguments"}, true},
		{"bounded limit", contract.Pre, `has(arguments.limit) && arguments.limit <= 100`, "", []string{"arguments"}, true},
		{"int vs double", contract.Pre, `arguments.ratio < 1`, "", []string{"arguments"}, true},
		{"membership", contract.Pre, `'path' in arguments && tool == 'fs.read_text_file'`, "", []string{"arguments", "tool"}, true},
		{"nested", contract.Pre, `arguments.opts.mode in ['r', 'rw']`, "", []string{"arguments"}, true},
		{"loop over a nested list", contract.Pre, `arguments.paths.all(p, p.startsWith('/tmp/'))`, "", []string{"arguments"}, true},
		{"no error", contract.Post, `!result.isError`, "", []string{"result"}, false},
		{"structured count", contract.Post, `structured.count >= 0`, "", []string{"structured"}, false},
		{"text content", contract.Post, `result.content.exists(c, c.type == 'text')`, "", []string{"result"}, false},
		{"post reads the call", contract.Post, `size(structured) > 0 || arguments.limit == 0`, "", []string{"arguments", "structured"}, false},

		{"result in a precondition", contract.Pre, `!result.isError`, "result is a result key, which pre clauses of a tool may not read", nil, false},
		{"structured in a precondition", contract.Pre, `structured.count > 0`, "undeclared reference to 'structured'", nil, false},
		{"the scope is named", contract.Pre, `!result.isError`, "pre clauses of a tool may read request (tool, arguments, state, facts, now)", nil, false},
		{"the schema is named", contract.Pre, `!result.isError`, "groundgate.call/v1", nil, false},
		{"unknown key", contract.Pre, `args.limit < 10`, "undeclared reference to 'args'", nil, false},
		{"a trading key", contract.Post, `data.rows > 0`, "undeclared reference to 'data'", nil, false},
		{"parameters", contract.Pre, `params.limit < 10`, "undeclared reference to 'params'", nil, false},
		{"not a bool", contract.Pre, `arguments.limit`, "not a bool", nil, false},
		{"tool is a string", contract.Pre, `tool > 3`, "no matching overload", nil, false},
		{"loop over a map", contract.Pre, `arguments.all(k, k != 'x')`, "iterates over a map", nil, false},
		{"too costly", contract.Post, `result.content.all(a, result.content.all(b, result.content.exists(c, a == b && b == c)))`, "exceeds the limit", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &contract.Contract{}
			k := cl("the_clause", tc.expr)
			field := string(tc.ph) + "[0].expr"
			if tc.ph == contract.Pre {
				c.Pre = []contract.Clause{k}
			} else {
				c.Post = []contract.Clause{k}
			}
			for _, check := range []func() []contract.Problem{
				func() []contract.Problem { return contract.Check(c, toolKind, nil) },
				func() []contract.Problem { return contract.NewCache(8).Check(c, toolKind, nil) },
			} {
				ps := check()
				if tc.want == "" {
					if ps != nil {
						t.Fatalf("refused: %+v", ps)
					}
					continue
				}
				if len(ps) != 1 || ps[0].Field != field || ps[0].Clause != "the_clause" || !strings.Contains(ps[0].Problem, tc.want) {
					t.Fatalf("problems %+v, want one at %s saying %q", ps, field, tc.want)
				}
			}
			p, err := contract.NewCache(8).Program("sha256:x", toolKind, nil, c)
			if tc.want != "" {
				if err == nil {
					t.Fatal("compiled")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := p.Clauses(tc.ph)[0]
			if !reflect.DeepEqual(got.Reads, tc.reads) || got.RequestOnly != tc.only {
				t.Errorf("reads %q request-only %v, want %q %v", got.Reads, got.RequestOnly, tc.reads, tc.only)
			}
		})
	}
	// A trading kind does not read a tool's keys, nor a tool the trading
	// kinds'.
	if ps := contract.Check(pre(cl("a", "has(arguments.x)")), "family", nil); ps == nil {
		t.Error("a family reads arguments")
	}
}

// ToolKeys is the call schema: seven keys, typed, documented, each readable
// with its type by a postcondition.
func TestToolKeys(t *testing.T) {
	want := map[string]contract.Scope{"tool": contract.ScopeRequest, "arguments": contract.ScopeRequest, "result": contract.ScopeResult, "structured": contract.ScopeResult,
		"state": contract.ScopeRequest, "facts": contract.ScopeRequest, "now": contract.ScopeRequest}
	ks := contract.ToolKeys()
	if len(ks) != len(want) {
		t.Fatalf("%d keys", len(ks))
	}
	for _, k := range ks {
		if want[k.Name] != k.Scope || strings.TrimSpace(k.Doc) == "" {
			t.Errorf("%+v", k)
		}
		zero := map[string]string{"string": "''", "map(string, dyn)": "{'a': dyn(1)}", "google.protobuf.Timestamp": "timestamp('2000-01-01T00:00:00Z')"}[k.Type]
		if ps := contract.Check(post(cl("typed", "type("+k.Name+") == type("+zero+")")), toolKind, nil); ps != nil {
			t.Errorf("%s: %+v", k.Name, ps)
		}
	}
	if contract.ToolSchemaVersion != "groundgate.call/v1" || contract.SchemaVersion != "groundgate.state/v1" {
		t.Error("a schema version changed")
	}
}

func TestToolState(t *testing.T) {
	st, err := contract.ToolState("fs.read", []byte(`{"path": "/tmp/a", "limit": 100, "ratio": 0.5, "big": 1e2, "one": 1.0, "huge": 123456789012345678901234567890, "exact": 9007199254740993, "neg": -0, "opts": {"mode": "r", "list": [1, "x", null, true]}, "nothing": null}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := contract.State{
		"tool": "fs.read", "state": map[string]any{}, "facts": map[string]any{},
		"arguments": map[string]any{
			"path": "/tmp/a", "limit": int64(100), "ratio": 0.5, "big": int64(100), "one": int64(1),
			"huge": 1.2345678901234568e+29, "exact": int64(9007199254740993), "neg": int64(0),
			"opts":    map[string]any{"mode": "r", "list": []any{int64(1), "x", nil, true}},
			"nothing": nil,
		},
	}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("state\n%#v\nwant\n%#v", st, want)
	}
	// No arguments; a result without isError, content or structuredContent.
	st, err = contract.ToolState("u.t", nil, []byte(`{"_meta": {"k": 1}}`))
	if err != nil {
		t.Fatal(err)
	}
	want = contract.State{"tool": "u.t", "arguments": map[string]any{}, "state": map[string]any{}, "facts": map[string]any{},
		"result":     map[string]any{"_meta": map[string]any{"k": int64(1)}, "content": []any{}, "isError": false},
		"structured": map[string]any{}}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("state\n%#v\nwant\n%#v", st, want)
	}
	st, err = contract.ToolState("u.t", []byte(`null`), []byte(`{"content": [{"type": "text", "text": "hi"}], "isError": true, "structuredContent": {"count": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st["structured"], map[string]any{"count": int64(3)}) || st["result"].(map[string]any)["isError"] != true {
		t.Fatalf("%#v", st)
	}

	deep := strings.Repeat("[", contract.MaxToolStateDepth) + strings.Repeat("]", contract.MaxToolStateDepth)
	for _, tc := range []struct{ name, args, result, want string }{
		{"arguments not an object", `[1]`, "", "arguments: not a JSON object"},
		{"result not an object", `{}`, `"text"`, "result: not a JSON object"},
		{"structuredContent not an object", `{}`, `{"content": [], "structuredContent": [1]}`, "structuredContent is not a JSON object"},
		{"syntax", `{"a": }`, "", "arguments"},
		{"duplicate key", `{"a": 1, "a": 2}`, "", "arguments"},
		{"trailing data", `{} {}`, "", "arguments"},
		{"too deep", `{"a": ` + deep + `}`, "", "nested deeper than"},
		{"number out of range", `{"a": 1e400}`, "", "arguments"},
	} {
		var res []byte
		if tc.result != "" {
			res = []byte(tc.result)
		}
		if _, err := contract.ToolState("u.t", []byte(tc.args), res); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// Just under the bound is accepted.
	ok := strings.Repeat("[", contract.MaxToolStateDepth-1) + strings.Repeat("]", contract.MaxToolStateDepth-1)
	if _, err := contract.ToolState("u.t", []byte(`{"a": `+ok+`}`), nil); err != nil {
		t.Errorf("depth %d: %v", contract.MaxToolStateDepth, err)
	}
}

// Clauses evaluate on ToolState's values: numbers compare across int and
// double, nested objects are reached by selection, a missing key is a
// verdict that does not hold (with an error), never a panic.
func TestToolEval(t *testing.T) {
	args := `{"path": "/tmp/a.txt", "limit": 100, "ratio": 0.25, "opts": {"mode": "r", "flags": {"b": true, "a": false}}, "paths": ["/tmp/x", "/etc/y"], "nothing": null}`
	preSt, err := contract.ToolState("fs.read", []byte(args), nil)
	if err != nil {
		t.Fatal(err)
	}
	postSt, err := contract.ToolState("fs.read", []byte(args), []byte(`{"content": [{"type": "text", "text": "hello"}], "structuredContent": {"count": 2, "mean": 1.5, "items": [{"id": 1}, {"id": 2}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ph    contract.Phase
		expr  string
		holds bool
		err   string
	}{
		{contract.Pre, `arguments.path.startsWith("/tmp/")`, true, ""},
		{contract.Pre, `has(arguments.limit) && arguments.limit <= 100`, true, ""},
		{contract.Pre, `arguments.limit <= 99.5`, false, ""},
		{contract.Pre, `arguments.limit == 100.0`, true, ""},
		{contract.Pre, `arguments.ratio < 1`, true, ""},
		{contract.Pre, `arguments.ratio > 0 && arguments.ratio <= 0.25`, true, ""},
		{contract.Pre, `arguments.opts.mode == 'r' && !arguments.opts.flags.a`, true, ""},
		{contract.Pre, `arguments.opts.flags.exists(k, k == 'b')`, true, ""},
		{contract.Pre, `arguments.opts.flags.map(k, k) == ['a', 'b']`, true, ""}, // key order
		{contract.Pre, `arguments.paths.all(p, p.startsWith('/tmp/'))`, false, ""},
		{contract.Pre, `arguments.nothing == null`, true, ""},
		{contract.Pre, `!has(arguments.offset) || arguments.offset >= 0`, true, ""},
		{contract.Pre, `tool == 'fs.read'`, true, ""},
		{contract.Pre, `arguments.offset >= 0`, false, "no such key: offset"},
		{contract.Pre, `arguments.path > 3`, false, "no such overload"},
		{contract.Post, `!result.isError`, true, ""},
		{contract.Post, `structured.count >= 0 && structured.mean > 1`, true, ""},
		{contract.Post, `structured.items.all(i, i.id > 0) && size(structured.items) == structured.count`, true, ""},
		{contract.Post, `result.content.exists(c, c.type == 'text' && c.text.contains('hell'))`, true, ""},
		{contract.Post, `structured.total > 0`, false, "no such key: total"},
	} {
		st := preSt
		if tc.ph == contract.Post {
			st = postSt
		}
		k := compileOne(t, toolKind, tc.ph, nil, tc.expr)
		v := k.Eval("fs.read", st)
		if v.Holds != tc.holds || !strings.Contains(v.Error, tc.err) || (tc.err == "") != (v.Error == "") {
			t.Errorf("%s: holds %v error %q, want %v %q", tc.expr, v.Holds, v.Error, tc.holds, tc.err)
		}
		if !v.Holds && (v.Message == "" || len(v.Values) == 0) {
			t.Errorf("%s: a failure without message or values: %+v", tc.expr, v)
		}
	}
	// A precondition's state has no result: a post clause evaluated on it
	// does not hold, it does not panic.
	v := compileOne(t, toolKind, contract.Post, nil, `!result.isError`).Eval("fs.read", preSt)
	if v.Holds || v.Error == "" || v.Values[0] != (contract.Reading{Key: "result", Value: "(absent)"}) {
		t.Errorf("%+v", v)
	}
	// The values a failure reports are the state's, rendered in key order.
	v = compileOne(t, toolKind, contract.Pre, nil, `arguments.limit < 10`).Eval("fs.read", preSt)
	want := `{"limit": 100, "nothing": null, "opts": {"flags": {"a": false, "b": true}, "mode": "r"}, "path": "/tmp/a.txt", "paths": ["/tmp/x", "/etc/y"], "ratio": 0.25}`
	if v.Holds || len(v.Values) != 1 || v.Values[0].Value != want {
		t.Errorf("values %+v, want %s", v.Values, want)
	}
}

func TestFormatJSON(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	many := map[string]any{}
	for _, k := range []string{"j", "i", "h", "g", "f", "e", "d", "c", "b", "a"} {
		many[k] = int64(len(k))
	}
	for _, tc := range []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{map[string]any{}, "{}"},
		{[]any{}, "[]"},
		{map[string]any{"b": 1.5, "a": []any{int64(1), nil, "x", false}}, `{"a": [1, null, "x", false], "b": 1.5}`},
		{many, `{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1, "h": 1, … 2 more}`},
		{[]any{long}, `["` + strings.Repeat("é", 64) + `"…(200 bytes)]`},
		{[]any{[]any{[]any{[]any{int64(1)}, map[string]any{"a": int64(1)}}}}, `[[[[1], {"a": 1}]]]`},
		{[]any{[]any{[]any{[]any{[]any{int64(1)}, map[string]any{"a": int64(1)}}}}}, `[[[[[… 1], {… 1}]]]]`},
		{[]any{[]any{[]any{[]any{[]any{}, map[string]any{}}}}}, `[[[[[], {}]]]]`},
		{map[string]any{"x": math.MaxInt64}, `{"x": 9223372036854775807}`},
	} {
		if got := contract.Format(tc.v); got != tc.want {
			t.Errorf("Format(%#v) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

// FuzzToolState: ToolState never panics on any arguments and result;
// what it accepts formats the same way every time, and a clause that reads
// every key evaluates on it without panicking.
func FuzzToolState(f *testing.F) {
	for _, seed := range []struct{ args, result string }{
		{`{"path": "/tmp/a", "limit": 100}`, ``},
		{`{}`, `{"content": [{"type": "text", "text": "x"}], "isError": false}`},
		{`null`, `{"content": [], "structuredContent": {"count": 1, "nested": {"a": [1, 2.5, -0, 1e300]}}}`},
		{`{"a": 9223372036854775808, "b": -9223372036854775808, "c": 1.0e-400}`, `{}`},
		{`{"a": {"b": {"c": {"d": {"e": [[[[["deep"]]]]]}}}}}`, `{"structuredContent": null}`},
		{`[]`, `{"content": 3}`},
		{`{"\u00e9": "\ud800"}`, `{"a":1,"A":2}`},
	} {
		f.Add([]byte(seed.args), []byte(seed.result), seed.result == "")
	}
	post := compileOneTB(f, `tool != '' && size(arguments) >= 0 && !result.isError && size(structured) >= 0 && result.content.exists_one(c, c == 'a') == false`)
	f.Fuzz(func(t *testing.T, args, result []byte, noResult bool) {
		if noResult {
			result = nil
		}
		st, err := contract.ToolState("u.t", args, result)
		if err != nil {
			if st != nil {
				t.Fatal("a state with an error")
			}
			return
		}
		// Values are plain JSON: the state re-encodes.
		if _, err := json.Marshal(st); err != nil {
			t.Fatalf("state does not encode: %v", err)
		}
		for _, k := range []string{"tool", "arguments", "result", "structured"} {
			v, ok := st[k]
			if !ok {
				continue
			}
			a := contract.Format(v)
			for range 3 {
				if b := contract.Format(v); b != a {
					t.Fatalf("Format(%s) is not deterministic:\n%s\n%s", k, a, b)
				}
			}
			again, err := contract.ToolState("u.t", args, result)
			if err != nil || contract.Format(again[k]) != a {
				t.Fatalf("ToolState is not deterministic for %s: %v", k, err)
			}
		}
		if post != nil {
			post.Eval("u.t", st)
		}
	})
}

// compileOneTB compiles one tool postcondition, or returns nil (the
// fuzzer then only converts) when the clause is refused.
func compileOneTB(tb testing.TB, expr string) *contract.Compiled {
	tb.Helper()
	p, err := contract.Compile(post(cl("all_keys", expr)), toolKind, nil)
	if err != nil {
		tb.Fatalf("%s: %v", expr, err)
	}
	return p.Post[0]
}
