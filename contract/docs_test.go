package contract_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/contract"
)

var update = flag.Bool("update", false, "rewrite the generated tables of docs/contracts.md")

var docPath = filepath.Join("..", "docs", "contracts.md")

// The tables of docs/contracts.md that say what the code says are
// generated from it, between <!-- NAME:begin --> and <!-- NAME:end -->:
// the schema from Keys(), what each kind and phase may read from Check,
// the catalog's clauses from registry/catalog, the call schema from
// ToolKeys(). The test fails when the
// document and the code part; -update rewrites the tables:
//
//	go test ./contract -run TestDocsTables -update
func TestDocsTables(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, s := range []struct{ name, body string }{
		{"keys", keysTable()},
		{"scopes", scopesTable(t)},
		{"catalog", catalogTable(t)},
		{"toolkeys", toolKeysTable(t)},
	} {
		begin, end := "<!-- "+s.name+":begin -->\n", "<!-- "+s.name+":end -->"
		i, j := strings.Index(doc, begin), strings.Index(doc, end)
		if i < 0 || j < i {
			t.Fatalf("%s has no %q … %q section", docPath, strings.TrimSpace(begin), end)
		}
		have := doc[i+len(begin) : j]
		if have == s.body {
			continue
		}
		if *update {
			doc = doc[:i+len(begin)] + s.body + doc[j:]
			continue
		}
		t.Errorf("%s: the %s table is not what the code says; run go test ./contract -run TestDocsTables -update. Want:\n%s", docPath, s.name, s.body)
	}
	if *update && doc != string(raw) {
		if err := os.WriteFile(docPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func keysTable() string {
	var b strings.Builder
	b.WriteString("| key | CEL type | scope | value |\n|---|---|---|---|\n")
	for _, k := range contract.Keys() {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", k.Name, k.Type, k.Scope, cell(k.Doc))
	}
	return b.String()
}

// readable reports whether a clause of the kind and phase may read key:
// Check, not a copy of the rule, decides.
func readable(kind string, ph contract.Phase, k contract.Key) bool {
	zero := map[string]string{"int": "0", "double": "0.0", "string": "''", "bool": "false", "list(string)": "[]", "map(string, double)": "{}"}[k.Type]
	c := &contract.Contract{}
	clause := cl("probe", fmt.Sprintf("type(%s) == type(%s)", k.Name, zero))
	if ph == contract.Pre {
		c.Pre = []contract.Clause{clause}
	} else {
		c.Post = []contract.Clause{clause}
	}
	return contract.Check(c, kind, nil) == nil
}

func scopesTable(t *testing.T) string {
	scopes := []contract.Scope{contract.ScopeRequest, contract.ScopeData, contract.ScopeResult, contract.ScopeScore}
	var b strings.Builder
	b.WriteString("| clauses of | request + `params.*` | data | result | score |\n|---|---|---|---|---|\n")
	for _, kind := range []string{"family", "metric", "operation", "signal", "recipe"} {
		for _, ph := range []contract.Phase{contract.Pre, contract.Post} {
			fmt.Fprintf(&b, "| %s %s |", kind, ph)
			for _, s := range scopes {
				n, of := 0, 0
				for _, k := range contract.Keys() {
					if k.Scope == s {
						of++
						if readable(kind, ph, k) {
							n++
						}
					}
				}
				switch n {
				case of:
					b.WriteString(" yes |")
				case 0:
					b.WriteString(" — |")
				default:
					t.Errorf("%s %s may read %d of the %d %s keys: a scope is all or nothing", kind, ph, n, of, s)
				}
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// toolKeysTable is the call schema, each key with the phases of a tool's
// clauses that may read it (Check decides).
func toolKeysTable(t *testing.T) string {
	var b strings.Builder
	b.WriteString("| key | CEL type | read by | value |\n|---|---|---|---|\n")
	for _, k := range contract.ToolKeys() {
		var by []string
		for _, ph := range []contract.Phase{contract.Pre, contract.Post} {
			c := &contract.Contract{}
			clause := cl("probe", fmt.Sprintf("type(%s) == type(%s)", k.Name, k.Name))
			if ph == contract.Pre {
				c.Pre = []contract.Clause{clause}
			} else {
				c.Post = []contract.Clause{clause}
			}
			if contract.Check(c, contract.ToolKind, nil) == nil {
				by = append(by, string(ph))
			}
		}
		if len(by) == 0 {
			t.Errorf("no tool clause may read %s", k.Name)
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", k.Name, k.Type, strings.Join(by, ", "), cell(k.Doc))
	}
	return b.String()
}

// catalogTable lists the catalog's clauses, each distinct clause once with
// the capabilities that declare it, and where it is checked.
func catalogTable(t *testing.T) string {
	type row struct {
		kind    string
		ph      contract.Phase
		clause  contract.Clause
		only    bool
		holders []string
	}
	var rows []*row
	for _, e := range catalogContracts(t) {
		p, err := contract.Compile(e.Sem.Contract, e.Kind, e.params())
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		for _, ph := range []contract.Phase{contract.Pre, contract.Post} {
		next:
			for _, k := range p.Clauses(ph) {
				for _, r := range rows {
					if r.kind == e.Kind && r.ph == ph && r.clause == k.Clause {
						r.holders = append(r.holders, e.Name)
						continue next
					}
				}
				rows = append(rows, &row{kind: e.Kind, ph: ph, clause: k.Clause, only: k.RequestOnly, holders: []string{e.Name}})
			}
		}
	}
	var b strings.Builder
	b.WriteString("| clause | checked | expression | declared by | message |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s |\n", r.clause.Name, where(r.kind, r.ph, r.only), cell(r.clause.Expr), strings.Join(r.holders, ", "), cell(r.clause.Message))
	}
	return b.String()
}

// where says at which point a catalog clause is checked, and its code.
func where(kind string, ph contract.Phase, requestOnly bool) string {
	gate := ""
	if requestOnly && (kind == "family" || kind == "metric") && ph == contract.Pre {
		gate = "Γ, then "
	}
	switch {
	case kind == "metric" && ph == contract.Pre:
		return gate + "on the verified result (F9, `pre`)"
	case kind == "metric":
		return "on the score (F10, `post`)"
	case ph == contract.Pre:
		return gate + "before the run (F9, `pre`)"
	}
	return "after the run (F10, `post`)"
}
