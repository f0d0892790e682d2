package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/registry/registrytest"
)

// Pointers into a tool call: what parses, to which field, with which
// sorts; and what is refused, with the words that say why.
func TestParsePointerTool(t *testing.T) {
	deep := "/arguments" + strings.Repeat("/a", MaxPointerDepth)
	cases := []struct {
		text, field, param, name string // name: FieldName
		err                      string // "" parses
	}{
		{"/tool", "tool", "", "tool", ""},
		{"/arguments/path", "arguments", "/path", "arguments/path", ""},
		{"/arguments/options/depth", "arguments", "/options/depth", "arguments/options/depth", ""},
		{"/arguments/paths/0", "arguments", "/paths/0", "arguments/paths/0", ""},
		{"/arguments/a~1b/c~0d", "arguments", "/a~1b/c~0d", "arguments/a~1b/c~0d", ""},
		{"/arguments/", "arguments", "/", "arguments/", ""}, // the member named ""
		{"/arguments/caf\u00e9", "arguments", "/caf\u00e9", "arguments/caf\u00e9", ""},
		{deep, "arguments", deep[len("/arguments"):], "arguments" + deep[len("/arguments"):], ""},
		// The existing ones are unchanged.
		{"/family", "family", "", "family", ""},
		{"/params/window", "params", "window", "params.window", ""},
		{"/facts/data/rows", "facts", "rows", "data.rows", ""},

		{"/arguments", "", "", "", "points to no field"},
		{"/tool/x", "", "", "", "points to no field"},
		{"/tools", "", "", "", "points to no field"},
		{"/Arguments/x", "", "", "", "points to no field"},
		{"arguments/x", "", "", "", "not a JSON pointer"},
		{"/arguments/a~2", "", "", "", "escaped as ~0"},
		{"/arguments/a~", "", "", "", "escaped as ~0"},
		{deep + "/a", "", "", "", "tokens deep"},
		{"/arguments/" + strings.Repeat("x", MaxPointerLen), "", "", "", "at most"},
		{"/arguments/\xff", "", "", "", "UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			p, err := ParsePointer(tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %+v, %v; want an error saying %q", p, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Text != tc.text || p.Field != tc.field || p.Param != tc.param {
				t.Fatalf("got %+v, want field %s param %q", p, tc.field, tc.param)
			}
			if got := FieldName(tc.text); got != tc.name {
				t.Errorf("FieldName = %q, want %q", got, tc.name)
			}
			wantSorts := map[string][]string{"tool": {"String"}, "arguments": {"Int", "Real", "String", "Bool"}}[tc.field]
			if wantSorts != nil && !slices.Equal(p.Sorts(), wantSorts) {
				t.Errorf("sorts %v, want %v", p.Sorts(), wantSorts)
			}
			if p.ForCall() != (wantSorts != nil) {
				t.Errorf("ForCall = %v", p.ForCall())
			}
		})
	}
}

// A JSON number keeps its exact decimal: the value is the text's, not the
// nearest float64's.
func TestNumberValue(t *testing.T) {
	cases := []struct {
		text  string
		num   float64
		exact string // "" when num's shortest decimal is the value
		err   bool
	}{
		{"100", 100, "", false},
		{"1e2", 100, "", false},
		{"1.00E+2", 100, "", false},
		{"100.0", 100, "", false},
		{"-0", 0, "", false},
		{"0.1", 0.1, "", false},
		{"-2.5", -2.5, "", false},
		{"1e300", 1e300, "", false},
		{"9007199254740992", 1 << 53, "", false},
		{"0.10000000000000000001", 0.1, "0.10000000000000000001", false},
		{"100.00000000000000001", 100, "100.00000000000000001", false},
		{"-1.000000000000000000001e2", -100, "-100.0000000000000000001", false},
		{"9007199254740993", 1 << 53, "9007199254740993", false},
		{"1e-400", 0, "0." + strings.Repeat("0", 399) + "1", false},
		{"1e400", 0, "", true},
		{"1e-600", 0, "", true},
		{"01", 0, "", true},
		{"0x10", 0, "", true},
		{"NaN", 0, "", true},
		{"Infinity", 0, "", true},
		{"1.", 0, "", true},
	}
	for _, tc := range cases {
		v, err := NumberValue(tc.text)
		if tc.err {
			if err == nil {
				t.Errorf("%s: got %+v, want an error", tc.text, v)
			}
			continue
		}
		if err != nil || v.Num != tc.num || v.Exact != tc.exact || v.IsStr || v.IsBool {
			t.Errorf("%s: got %+v, %v; want %v exact %q", tc.text, v, err, tc.num, tc.exact)
			continue
		}
		// The record reads back as the same value.
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var back Value
		if err := json.Unmarshal(b, &back); err != nil || back != v {
			t.Errorf("%s: %s reads back as %+v, %v", tc.text, b, back, err)
		}
	}
	for _, tc := range []struct {
		v         Value
		sort, lit string
	}{
		{mustNumber(t, "100.00000000000000001"), "Real", "100.00000000000000001"},
		{mustNumber(t, "-0.10000000000000000001"), "Real", "(- 0.10000000000000000001)"},
		{mustNumber(t, "1e-400"), "Real", "0." + strings.Repeat("0", 399) + "1"},
		{mustNumber(t, "1e2"), "Int", "100"},
		{mustNumber(t, "100.00000000000000001"), "Int", ""},
		{mustNumber(t, "9007199254740993"), "Int", ""},
	} {
		lit, err := literal(tc.v, tc.sort)
		if tc.lit == "" {
			if err == nil || !strings.Contains(err.Error(), "not an integer") {
				t.Errorf("%s as %s: got %q, %v; want refused", tc.v, tc.sort, lit, err)
			}
			continue
		}
		if err != nil || lit != tc.lit {
			t.Errorf("%s as %s: got %q, %v; want %q", tc.v, tc.sort, lit, err, tc.lit)
		}
	}
}

func mustNumber(t *testing.T, text string) Value {
	t.Helper()
	v, err := NumberValue(text)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// toolPolicy compiles a policy over calls to every tool.
func toolPolicy(t *testing.T, name, smtlib string, bind map[string]string, appliesTo ...string) *Compiled {
	t.Helper()
	if len(appliesTo) == 0 {
		appliesTo = []string{"tool"}
	}
	c, err := Compile(name, Policy{SMTLIB: smtlib, Bind: bind, Allow: "allow", AppliesTo: appliesTo})
	if err != nil {
		t.Fatalf("Compile(%s): %v", name, err)
	}
	return c
}

func call(tool, args string) Request {
	return Request{Tool: tool, Arguments: json.RawMessage(args)}
}

// Policies over tool calls admit and refuse calls by their tool, their
// arguments and how they were grounded, under both solvers, with
// identical refusals.
func TestToolPolicies(t *testing.T) {
	sandbox := toolPolicy(t, "sandbox", `(declare-const path String) (declare-const allow Bool)
		(assert (! (=> allow (str.prefixof "/tmp/allowed/" path)) :named under_tmp_allowed))
		(assert (=> (str.prefixof "/tmp/allowed/" path) allow))`, map[string]string{"path": "/arguments/path"})
	limit := toolPolicy(t, "limit", `(declare-const limit Int) (declare-const allow Bool)
		(assert (! (=> allow (<= limit 100)) :named at_most_100))
		(assert (=> (<= limit 100) allow))`, map[string]string{"limit": "/arguments/limit"})
	ratio := toolPolicy(t, "ratio", `(declare-const r Real) (define-fun allow () Bool (<= r 100.0))`,
		map[string]string{"r": "/arguments/ratio"})
	noDelete := toolPolicy(t, "no_delete", `(declare-const tool String) (declare-const allow Bool)
		(assert (! (=> allow (not (= tool "fs.delete_file"))) :named never_delete))
		(assert (=> (not (= tool "fs.delete_file")) allow))`, map[string]string{"tool": "/tool"})
	depth := toolPolicy(t, "depth", `(declare-const d Int) (declare-const allow Bool)
		(assert (! (=> allow (<= 0 d 3)) :named shallow)) (assert (=> (<= 0 d 3) allow))`,
		map[string]string{"d": "/arguments/options/depth"}, "fs.search_files")
	first := toolPolicy(t, "first_path", `(declare-const p String) (declare-const allow Bool)
		(assert (! (=> allow (str.prefixof "/tmp/" p)) :named first_under_tmp)) (assert (=> (str.prefixof "/tmp/" p) allow))`,
		map[string]string{"p": "/arguments/paths/0"})
	flag := toolPolicy(t, "not_recursive", `(declare-const rec Bool) (declare-const allow Bool)
		(assert (! (=> allow (not rec)) :named no_recursion)) (assert (=> (not rec) allow))`,
		map[string]string{"rec": "/arguments/recursive"})
	escaped := toolPolicy(t, "escaped", `(declare-const v String) (declare-const allow Bool)
		(assert (! (=> allow (= v "ok")) :named is_ok)) (assert (=> (= v "ok") allow))`,
		map[string]string{"v": "/arguments/a~1b/c~0d"})
	// How the call was grounded (/grounding/…): grounding_test.go.
	named := destructiveNeedsName(t)
	half := toolPolicy(t, "at_least_half", `(declare-const c Real) (declare-const allow Bool)
		(assert (! (=> allow (>= c 0.5)) :named half)) (assert (=> (>= c 0.5) allow))`,
		map[string]string{"c": "/grounding/confidence"}, "db.query")
	noKeyword := toolPolicy(t, "no_keyword", `(declare-const mode String) (declare-const allow Bool)
		(assert (! (=> allow (not (= mode "keyword"))) :named not_by_keyword)) (assert (=> (not (= mode "keyword")) allow))`,
		map[string]string{"mode": "/grounding/mode"})

	noGround := call("fs.delete_file", `{}`) // no match, no exemption

	cases := []struct {
		name   string
		policy *Compiled
		req    Request
		reason string // "" admitted
		core   []string
		detail string // words the refusal's detail holds
	}{
		{"path allowed", sandbox, call("fs.write_file", `{"path": "/tmp/allowed/a.txt", "content": "x"}`), "", nil, ""},
		{"path refused", sandbox, call("fs.write_file", `{"path": "/etc/passwd"}`), ReasonViolated, []string{"under_tmp_allowed"}, `arguments/path="/etc/passwd"`},
		{"path prefix without the slash", sandbox, call("fs.write_file", `{"path": "/tmp/allowed"}`), ReasonViolated, []string{"under_tmp_allowed"}, ""},
		{"path escaping the prefix as text", sandbox, call("fs.write_file", `{"path": "/tmp/allowed\u00e9/x"}`), ReasonViolated, []string{"under_tmp_allowed"}, ""},
		{"path missing", sandbox, call("fs.write_file", `{"content": "x"}`), ReasonMissing, nil, "the call's arguments have no /path"},
		{"no arguments", sandbox, call("fs.list", ``), ReasonMissing, nil, "the call's arguments have no /path"},
		{"path a number", sandbox, call("fs.write_file", `{"path": 7}`), ReasonType, nil, "is a number"},
		{"path an object", sandbox, call("fs.write_file", `{"path": {"p": "/tmp/allowed/x"}}`), ReasonType, nil, "hold an object at /path"},
		{"path null", sandbox, call("fs.write_file", `{"path": null}`), ReasonType, nil, "hold null at /path"},
		{"path an array", sandbox, call("fs.write_file", `{"path": ["/tmp/allowed/x"]}`), ReasonType, nil, "hold an array at /path"},
		{"not a call", sandbox, Request{Family: "MOM_WZS"}, ReasonMissing, nil, "not a tool call"},

		{"limit 100", limit, call("db.query", `{"limit": 100}`), "", nil, ""},
		{"limit 1e2", limit, call("db.query", `{"limit": 1e2}`), "", nil, ""},
		{"limit 100.0", limit, call("db.query", `{"limit": 100.0}`), "", nil, ""},
		{"limit -5", limit, call("db.query", `{"limit": -5}`), "", nil, ""},
		{"limit 101", limit, call("db.query", `{"limit": 101}`), ReasonViolated, []string{"at_most_100"}, "arguments/limit=101"},
		{"limit 2.5", limit, call("db.query", `{"limit": 2.5}`), ReasonType, nil, "2.5 is not an integer"},
		{"limit a hair over 100", limit, call("db.query", `{"limit": 100.00000000000000001}`), ReasonType, nil, "100.00000000000000001 is not an integer"},
		{"limit beyond 2^53", limit, call("db.query", `{"limit": 9007199254740993}`), ReasonType, nil, "not an integer"},
		{"limit a string", limit, call("db.query", `{"limit": "50"}`), ReasonType, nil, "is a string"},
		{"limit missing", limit, call("db.query", `{"query": "select 1"}`), ReasonMissing, nil, "the call's arguments have no /limit"},

		{"ratio 100", ratio, call("x.y", `{"ratio": 100}`), "", nil, ""},
		{"ratio exactly a hair over 100", ratio, call("x.y", `{"ratio": 100.00000000000000001}`), ReasonViolated, []string{}, "arguments/ratio=100.00000000000000001"},
		{"ratio 0.1", ratio, call("x.y", `{"ratio": 0.1}`), "", nil, ""},

		{"tool read", noDelete, call("fs.read_text_file", `{"path": "/etc/passwd"}`), "", nil, ""},
		{"tool delete", noDelete, call("fs.delete_file", `{"path": "/tmp/x"}`), ReasonViolated, []string{"never_delete"}, `tool="fs.delete_file"`},

		{"nested admitted", depth, call("fs.search_files", `{"options": {"depth": 3, "glob": "*"}}`), "", nil, ""},
		{"nested refused", depth, call("fs.search_files", `{"options": {"depth": 4}}`), ReasonViolated, []string{"shallow"}, "arguments/options/depth=4"},
		{"nested member missing", depth, call("fs.search_files", `{"options": {}}`), ReasonMissing, nil, "have no /options/depth"},
		{"nested parent a string", depth, call("fs.search_files", `{"options": "deep"}`), ReasonMissing, nil, "(/options is a string)"},
		{"nested parent an object", depth, call("fs.search_files", `{"options": {"depth": {"max": 1}}}`), ReasonType, nil, "hold an object at /options/depth"},

		{"index admitted", first, call("fs.read_multiple_files", `{"paths": ["/tmp/a", "/etc/b"]}`), "", nil, ""},
		{"index refused", first, call("fs.read_multiple_files", `{"paths": ["/etc/a", "/tmp/b"]}`), ReasonViolated, []string{"first_under_tmp"}, `arguments/paths/0="/etc/a"`},
		{"index out of range", first, call("fs.read_multiple_files", `{"paths": []}`), ReasonMissing, nil, "(/paths is an array of 0)"},
		{"index into an object", first, call("fs.read_multiple_files", `{"paths": {"0": "/tmp/a"}}`), "", nil, ""},

		{"bool false", flag, call("fs.list", `{"recursive": false}`), "", nil, ""},
		{"bool true", flag, call("fs.list", `{"recursive": true}`), ReasonViolated, []string{"no_recursion"}, "arguments/recursive=true"},
		{"bool a string", flag, call("fs.list", `{"recursive": "false"}`), ReasonType, nil, "does not fit the policy's Bool"},

		{"escaped member", escaped, call("x.y", `{"a/b": {"c~d": "ok"}}`), "", nil, ""},
		{"escaped member refused", escaped, call("x.y", `{"a/b": {"c~d": "no"}}`), ReasonViolated, []string{"is_ok"}, ""},
		{"escaped member not unescaped twice", escaped, call("x.y", `{"a~1b": {"c~0d": "ok"}}`), ReasonMissing, nil, "have no /a~1b/c~0d"},

		{"keyword 0.5 refused", named, grounded("fs.delete_file", "keyword", 0.5), ReasonViolated, []string{"destructive_needs_confidence_0_7"}, "grounding.confidence=0.5"},
		{"inversion 0.4 refused", named, grounded("shop.delete_all", "inversion", 0.4), ReasonViolated, []string{"destructive_needs_confidence_0_7"}, "grounding.confidence=0.4"},
		{"relevance 0.437 refused", named, grounded("shop.delete_all", "relevance", 0.437), ReasonViolated, []string{"destructive_needs_confidence_0_7"}, "grounding.confidence=0.437"},
		{"a hair under 0.7 refused", named, grounded("fs.delete_file", "relevance", 0.699), ReasonViolated, nil, "grounding.confidence=0.699"},
		{"tag 0.7 admitted", named, grounded("fs.delete_file", "tag", 0.7), "", nil, ""},
		{"alias 0.9 admitted", named, grounded("fs.delete_file", "alias", 0.9), "", nil, ""},
		{"exact 1.0 admitted", named, grounded("fs.delete_file", "exact", 1.0), "", nil, ""},
		{"another tool by keyword", named, grounded("fs.read_text_file", "keyword", 0.5), "", nil, ""},
		{"an exempt read", named, exempt("fs.read_text_file"), "", nil, ""},
		{"a destructive tool exempt", named, exempt("shop.delete_all"), ReasonViolated, []string{"destructive_needs_confidence_0_7"}, "grounding.confidence=0"},
		{"no grounding", named, noGround, ReasonMissing, nil, "the evidence did not discover fs.delete_file"},
		{"not a call", named, Request{Family: "MOM_WZS"}, ReasonMissing, nil, "not a tool call"},

		{"0.5 is at least 0.5", half, grounded("db.query", "keyword", 0.5), "", nil, ""},
		{"0.499 is not", half, grounded("db.query", "relevance", 0.499), ReasonViolated, []string{"half"}, "grounding.confidence=0.499"},
		{"exempt is 0", half, exempt("db.query"), ReasonViolated, []string{"half"}, "grounding.confidence=0"},

		{"mode keyword refused", noKeyword, grounded("fs.write_file", "keyword", 0.5), ReasonViolated, []string{"not_by_keyword"}, `grounding.mode="keyword"`},
		{"mode alias admitted", noKeyword, grounded("fs.write_file", "alias", 0.9), "", nil, ""},
		{"mode exempt admitted", noKeyword, exempt("fs.read_text_file"), "", nil, ""},
	}
	pools := corpusPools(t)
	got := map[string][][]Refusal{}
	for _, kind := range solverKinds {
		k := NewChecker(pools[kind], 10*time.Second)
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				rs := chkCheck(t, k, []*Compiled{tc.policy}, tc.req)
				got[kind] = append(got[kind], rs)
				if tc.reason == "" {
					if len(rs) != 0 {
						t.Fatalf("refused: %+v", rs)
					}
					return
				}
				if len(rs) != 1 {
					t.Fatalf("got %+v, want one refusal", rs)
				}
				r := rs[0]
				if r.Policy != tc.policy.Name || r.Reason != tc.reason || !strings.Contains(r.Detail, tc.detail) {
					t.Fatalf("got %s %s (%s), want %s %s saying %q", r.Policy, r.Reason, r.Detail, tc.policy.Name, tc.reason, tc.detail)
				}
				if want := tc.core; want != nil && !slices.Equal(r.Core, want) {
					t.Fatalf("core %q, want %q (%s)", r.Core, want, r.Detail)
				}
				t.Logf("%s: %s", r.Reason, r.Detail)
			})
		}
	}
	if !reflect.DeepEqual(got["z3"], got["cvc5"]) {
		for i := range cases {
			if i < len(got["z3"]) && i < len(got["cvc5"]) && !reflect.DeepEqual(got["z3"][i], got["cvc5"][i]) {
				t.Errorf("%s: z3 %+v, cvc5 %+v", cases[i].name, got["z3"][i], got["cvc5"][i])
			}
		}
		t.Fatal("z3 and cvc5 refuse differently")
	}

	// All of them at once, as the gateway asks: one refusal per refusing
	// policy, in the set's order, and a witness field naming the argument.
	set := NewSet(sandbox, limit, ratio, noDelete, depth, first, flag, escaped)
	cs := set.ForTool("fs.search_files")
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	if want := []string{"depth", "escaped", "first_path", "limit", "no_delete", "not_recursive", "ratio", "sandbox"}; !slices.Equal(names, want) {
		t.Fatalf("ForTool(fs.search_files) = %v, want %v", names, want)
	}
	if cs := set.ForTool("fs.read_text_file"); slices.Contains(cs, depth) || len(cs) != 7 {
		t.Fatalf("ForTool(fs.read_text_file) holds %d policies, depth among them: %v", len(cs), cs)
	}
	req := call("fs.search_files", `{"path": "/tmp/allowed/x", "limit": 7, "ratio": 1.5, "options": {"depth": 9}, "paths": ["/tmp/q"], "recursive": true, "a/b": {"c~d": "ok"}}`)
	for _, kind := range solverKinds {
		rs := chkCheck(t, NewChecker(pools[kind], 10*time.Second), cs, req)
		var refusing []string
		for _, r := range rs {
			refusing = append(refusing, r.Policy+":"+r.Field())
		}
		if want := []string{"depth:arguments/options/depth", "not_recursive:arguments/recursive"}; !slices.Equal(refusing, want) {
			t.Fatalf("%s: refusals %v (%+v), want %v", kind, refusing, rs, want)
		}
	}
}

// Policies over calls and policies over requests do not mix: a policy
// binding a call's fields applies to tools only, one binding a request's
// fields to requests only, and the sets select them apart.
func TestToolPolicyScope(t *testing.T) {
	const body = `(declare-const x String) (declare-const y Int) (declare-const allow Bool) (assert (=> allow (= x "a")))`
	longTool := "fs." + strings.Repeat("t", 100)
	cases := []struct {
		name      string
		bind      map[string]string
		appliesTo []string
		field     string // "" compiles
		want      string
	}{
		{"arguments on the kind tool", map[string]string{"x": "/arguments/path"}, []string{"tool"}, "", ""},
		{"arguments on tools by name", map[string]string{"x": "/arguments/path"}, []string{"fs.read_text_file", longTool}, "", ""},
		{"tool on the kind tool", map[string]string{"x": "/tool"}, []string{"tool"}, "", ""},
		{"tool and arguments", map[string]string{"x": "/tool", "y": "/arguments/n"}, []string{"tool"}, "", ""},
		{"nothing bound on tools and families", nil, []string{"tool", "family"}, "", ""},
		{"params on a dotted family", map[string]string{"y": "/params/window"}, []string{"edge.case"}, "", ""},

		{"arguments on the kind family", map[string]string{"x": "/arguments/path"}, []string{"tool", "family"}, "applies_to[1]", `"family" is not a tool`},
		{"tool on a family name", map[string]string{"x": "/tool"}, []string{"MOM_WZS"}, "applies_to[0]", "only a tool call has"},
		{"params on the kind tool", map[string]string{"y": "/params/window"}, []string{"family", "tool"}, "applies_to[1]", "a tool call does not have"},
		{"family on the kind tool", map[string]string{"x": "/family"}, []string{"tool"}, "applies_to[0]", "/family"},
		{"facts on the kind tool", map[string]string{"y": "/facts/data/rows"}, []string{"tool"}, "applies_to[0]", "a tool call does not have"},
		{"grid on the kind tool", map[string]string{"y": "/grid/points"}, []string{"tool"}, "applies_to[0]", "a tool call does not have"},
		{"params on a long tool name", map[string]string{"y": "/params/window"}, []string{longTool}, "applies_to[0]", "governs tool calls"},
		{"arguments and params", map[string]string{"x": "/arguments/path", "y": "/params/window"}, []string{"tool"}, "bind.y", "write two policies"},
		{"a tool name too long", nil, []string{"fs." + strings.Repeat("t", 129)}, "applies_to[0]", "neither a kind nor a capability name"},
		{"an upstream name too long", nil, []string{strings.Repeat("u", 60) + ".tool"}, "applies_to[0]", "neither a kind nor a capability name"},
		{"arguments as a Bool fits", map[string]string{"x": "/arguments/on"}, []string{"tool"}, "bind.x", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			smtlib := body
			if tc.name == "arguments as a Bool fits" {
				smtlib = `(declare-const x Bool) (declare-const allow Bool) (assert (=> allow x))`
				tc.field = ""
			}
			_, err := Compile("p", Policy{SMTLIB: smtlib, Bind: tc.bind, Allow: "allow", AppliesTo: tc.appliesTo})
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || !slices.ContainsFunc(ve.Fields, func(f registry.FieldError) bool {
				return f.Field == tc.field && strings.Contains(f.Problem, tc.want)
			}) {
				t.Fatalf("got %v, want field %s saying %q", err, tc.field, tc.want)
			}
		})
	}

	// Selection: a call policy never governs a request, a request policy
	// never a call; a policy that binds neither may govern both.
	callP := toolPolicy(t, "call", `(declare-const p String) (declare-const allow Bool) (assert (=> allow (= p "a")))`,
		map[string]string{"p": "/arguments/p"}, "tool")
	named := toolPolicy(t, "named", `(declare-const p String) (declare-const allow Bool) (assert (=> allow (= p "a")))`,
		map[string]string{"p": "/arguments/p"}, "fs.read_text_file", "edge.case")
	reqP := chkPolicy(t, "req", `(declare-const w Int) (declare-const allow Bool) (assert (=> allow (< w 5)))`, map[string]string{"w": "/params/window"}, "allow")
	dotted, err := Compile("dotted", Policy{SMTLIB: `(declare-const w Int) (declare-const allow Bool) (assert (=> allow (< w 5)))`,
		Bind: map[string]string{"w": "/params/window"}, Allow: "allow", AppliesTo: []string{"edge.case"}})
	if err != nil {
		t.Fatal(err)
	}
	blanket, err := Compile("blanket", Policy{SMTLIB: `(define-fun allow () Bool false)`, Allow: "allow", AppliesTo: []string{"tool", "family"}})
	if err != nil {
		t.Fatal(err)
	}
	set := NewSet(callP, named, reqP, dotted, blanket)
	sel := func(cs []*Compiled) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	for _, tc := range []struct {
		what      string
		got, want []string
	}{
		{"ForTool(fs.read_text_file)", sel(set.ForTool("fs.read_text_file")), []string{"blanket", "call", "named"}},
		{"ForTool(fs.write_file)", sel(set.ForTool("fs.write_file")), []string{"blanket", "call"}},
		{"ForTool(edge.case)", sel(set.ForTool("edge.case")), []string{"blanket", "call", "named"}},
		{"Applicable(MOM_WZS, SRP)", sel(set.Applicable("MOM_WZS", "SRP")), []string{"blanket", "req"}},
		{"Applicable(edge.case, SRP)", sel(set.Applicable("edge.case", "SRP")), []string{"blanket", "dotted", "req"}},
		{"Governing(fs.read_text_file, tool)", sel(set.Governing("fs.read_text_file", registry.KindTool)), []string{"blanket", "call", "named"}},
		{"Governing(edge.case, operation)", sel(set.Governing("edge.case", registry.KindOperation)), []string{"dotted"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.what, tc.got, tc.want)
		}
	}
}

// Against the registry: a tool capability declares no parameters, and a
// policy over its calls is not refused for that; a policy binding a
// request's fields is refused on a tool's name, and one binding a call's
// fields on another capability's.
func TestToolPolicyCheckRegistry(t *testing.T) {
	ctx := context.Background()
	store := registrytest.Seeded(t, filepath.Join(t.TempDir(), "reg.db"), registry.Options{})
	tool := registry.Entry{
		Name: "fs.read_text_file", Kind: registry.KindTool,
		Disc: registry.Discovery{Title: "Read Text File", Description: "Read the complete contents of a file as text."},
		Tool: &registry.ToolLayers{
			Sem: registry.ToolSemantic{Effect: registry.EffectRead, Idempotent: true},
			Alg: registry.ToolAlgebraic{
				InputSchema:  json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}`),
				OutputSchema: json.RawMessage(`null`),
			},
			Impl: registry.ToolImplementation{Upstream: "fs", Tool: "read_text_file"},
		},
	}
	if _, err := store.Put(ctx, tool); err != nil {
		t.Fatal(err)
	}
	snap := store.Current()
	const strBody = `(declare-const p String) (declare-const allow Bool) (assert (=> allow (= p "a")))`
	cases := []struct {
		name      string
		bind      map[string]string
		appliesTo []string
		field     string
		want      string
	}{
		{"arguments on the kind tool", map[string]string{"p": "/arguments/path"}, []string{"tool"}, "", ""},
		{"arguments on the tool", map[string]string{"p": "/arguments/path"}, []string{"fs.read_text_file"}, "", ""},
		{"tool on a tool the registry lacks", map[string]string{"p": "/tool"}, []string{"gh.create_issue"}, "", ""},
		{"nothing bound on the tool", nil, []string{"fs.read_text_file"}, "", ""},
		{"data on the tool", map[string]string{"p": "/data"}, []string{"fs.read_text_file"}, "applies_to[0]", "fs.read_text_file is a tool"},
		{"a request policy on a family", map[string]string{"p": "/data"}, []string{"family"}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compile("p", Policy{SMTLIB: strBody, Bind: tc.bind, Allow: "allow", AppliesTo: tc.appliesTo})
			if err != nil {
				t.Fatal(err)
			}
			err = c.CheckRegistry(snap)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || !slices.ContainsFunc(ve.Fields, func(f registry.FieldError) bool {
				return f.Field == tc.field && strings.Contains(f.Problem, tc.want)
			}) {
				t.Fatalf("got %v, want field %s saying %q", err, tc.field, tc.want)
			}
		})
	}
	// A capability spelt like a tool (a signal, edge.case) is the
	// registry's to tell apart: Compile accepts a policy over calls that
	// names it, the registry refuses it; a policy over requests that
	// names it passes both.
	edge, err := registry.DecodeEntry([]byte(edgeCase), "edge")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(ctx, edge); err != nil {
		t.Fatal(err)
	}
	snap = store.Current()
	overCalls, err := Compile("p", Policy{SMTLIB: strBody, Bind: map[string]string{"p": "/arguments/path"}, Allow: "allow", AppliesTo: []string{"tool", "edge.case"}})
	if err != nil {
		t.Fatal(err)
	}
	var ve *ValidationError
	if err := overCalls.CheckRegistry(snap); !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != "applies_to[1]" ||
		!strings.Contains(ve.Fields[0].Problem, "edge.case is a capability of kind signal") {
		t.Fatalf("a policy over calls naming a signal: got %v", err)
	}
	overRequests, err := Compile("p", Policy{SMTLIB: `(declare-const lo Real) (declare-const allow Bool) (assert (=> allow (< lo 0.0)))`,
		Bind: map[string]string{"lo": "/params/lo"}, Allow: "allow", AppliesTo: []string{"edge.case"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := overRequests.CheckRegistry(snap); err != nil {
		t.Fatalf("a policy over requests naming a signal spelt like a tool: %v", err)
	}
}

// edgeCase is a signal whose name is spelt like a tool's (registry/testdata/entries.json).
const edgeCase = `{
    "name": "edge.case",
    "kind": "signal",
    "sem": {"pure": true, "deterministic": true, "commutative": false, "associative": false, "idempotent": true, "orientation": "none", "stateful": false},
    "alg": {"inputs": ["series"], "outputs": ["series"], "arity": 1, "reversible": false,
            "params": [{"name": "lo", "type": "float", "default": -1e-7, "max": 0}, {"name": "hi", "type": "float", "default": 1e21}]},
    "impl": {"engine": "groundgate/v1", "ir": "elementwise", "fusable": true, "expr": "(clip x $lo $hi)"},
    "disc": {"description": "A signal spelt like a tool."}
}`

// Lint reads policies over calls as it reads any other: vacuity and
// tautology over every arguments value, and conflicts only between
// policies that can govern one call.
func TestToolPolicyLint(t *testing.T) {
	atMost := func(name string, n int, appliesTo ...string) *Compiled {
		return toolPolicy(t, name, fmt.Sprintf(`(declare-const limit Int) (declare-const allow Bool)
			(assert (! (=> allow (<= limit %d)) :named cap)) (assert (=> (<= limit %d) allow))`, n, n),
			map[string]string{"limit": "/arguments/limit"}, appliesTo...)
	}
	atLeast := func(name string, n int, appliesTo ...string) *Compiled {
		return toolPolicy(t, name, fmt.Sprintf(`(declare-const limit Int) (declare-const allow Bool)
			(assert (! (=> allow (>= limit %d)) :named floor)) (assert (=> (>= limit %d) allow))`, n, n),
			map[string]string{"limit": "/arguments/limit"}, appliesTo...)
	}
	capAll := atMost("cap_all", 10, "tool")
	capA := atMost("cap_a", 10, "fs.a")
	floorB := atLeast("floor_b", 20, "fs.b")
	floorAll := atLeast("floor_all", 20, "tool")
	famFloor := chkPolicy(t, "fam_floor", `(declare-const limit Int) (declare-const allow Bool)
		(assert (! (=> allow (>= limit 20)) :named floor)) (assert (=> (>= limit 20) allow))`, map[string]string{"limit": "/params/limit"}, "allow")
	never := toolPolicy(t, "never", `(declare-const p String) (declare-const allow Bool)
		(assert (! (=> allow (str.prefixof "/a/" p)) :named a)) (assert (! (not (str.prefixof "/" p)) :named b))
		(assert (=> (str.prefixof "/a/" p) allow))`, map[string]string{"p": "/arguments/path"})
	pools := corpusPools(t)
	for _, kind := range solverKinds {
		k := NewChecker(pools[kind], 10*time.Second)
		ctx := context.Background()
		for _, tc := range []struct {
			policy    *Compiled
			others    []*Compiled
			conflicts []string
			vacuous   bool
		}{
			{capAll, nil, nil, false},
			{capA, []*Compiled{floorB, famFloor}, nil, false},           // other tools, and requests: never one call
			{capA, []*Compiled{floorAll}, []string{"floor_all"}, false}, // every tool, fs.a among them
			{capAll, []*Compiled{floorB, capA}, []string{"floor_b"}, false},
			{never, nil, nil, true},
		} {
			rep, err := k.Lint(ctx, tc.policy, tc.others)
			if err != nil {
				t.Fatal(err)
			}
			var with []string
			for _, c := range rep.Conflicts {
				with = append(with, c.With)
				if !strings.Contains(c.Detail, "calling a tool") {
					t.Errorf("%s: conflict detail %q", kind, c.Detail)
				}
			}
			if !slices.Equal(with, tc.conflicts) || rep.Vacuous != tc.vacuous || rep.Tautological || len(rep.Undecided) > 0 {
				t.Errorf("%s: Lint(%s) = %+v, want conflicts %v vacuous %v", kind, tc.policy.Name, rep, tc.conflicts, tc.vacuous)
			}
		}
	}
}
