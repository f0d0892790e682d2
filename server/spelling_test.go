package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/hashing/hashingtest"
)

// spellingBodies are valid bodies of every route that reads one.
func spellingBodies(t *testing.T, a *api, tr trail) []struct{ method, path, body string } {
	evidence := a.do("GET", "/v1/discoveries/"+tr.discovery, nil).body
	req := `{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"oil-spot/wti-daily.csv"}`
	policy := `{"smtlib":"(declare-const leverage Real)\n(declare-const allow Bool)\n(assert (! (= allow (<= leverage 2.0)) :named cap))","bind":{"leverage":"/params/leverage"},"allow":"allow","applies_to":["family"]}`
	return []struct{ method, path, body string }{
		{"POST", "/v1/discover", `{"prompt":"momentum on WTI"}`},
		{"POST", "/v1/discover", `{"terms":["momentum","sharpe ratio"]}`},
		{"POST", "/v1/ground", fmt.Sprintf(`{"request":%s,"discovery":%q,"repair":"rules"}`, req, tr.discovery)},
		{"POST", "/v1/ground", fmt.Sprintf(`{"request":%s,"discovery":%s}`, req, evidence)},
		{"POST", "/v1/executions", fmt.Sprintf(`{"grounding":%q}`, tr.grounding)},
		{"PUT", "/v1/registry/capabilities/ODD_1", `{"name":"ODD_1",` + entry[1:]},
		{"POST", "/v1/contracts/check", `{"request":` + req + `,"data":false}`},
		{"PUT", "/v1/policies/cap", policy},
		{"POST", "/v1/policies/lint", policy},
		{"POST", "/v1/fuzz/runs", `{"seconds":1,"seed":1,"runtime":false}`},
	}
}

// One object, one spelling: every key of every body, given twice, given
// twice in two letter cases, or (in the body's own object) in the other
// case alone, is a 400 whose detail names the key. Nothing is stored.
func TestKeySpellingsEveryBody(t *testing.T) {
	a := start(t, token)
	tr := a.execute()
	before := a.do("GET", "/v1/registry", nil).body
	n := 0
	for _, b := range spellingBodies(t, a, tr) {
		var probe any
		if err := json.Unmarshal([]byte(b.body), &probe); err != nil {
			t.Fatalf("%s: %v", b.body, err)
		}
		for _, m := range hashingtest.KeyMutations([]byte(b.body)) {
			if m.Kind == "case" && !m.Top {
				continue // inside a map (params, bind) another case is another name
			}
			n++
			r := a.do(b.method, b.path, m.Doc, "Authorization", "Bearer "+token)
			if r.status != 400 {
				t.Errorf("%s %s %s %q: %d, want 400: %.300s\n%.300s", b.method, b.path, m.Kind, m.Key, r.status, r.body, m.Doc)
				continue
			}
			p := r.problem(t)
			if detail, _ := p["detail"].(string); !strings.Contains(detail, fmt.Sprintf("%q", m.Key)) {
				t.Errorf("%s %s %s: detail %q does not name %q", b.method, b.path, m.Kind, detail, m.Key)
			}
		}
	}
	if after := a.do("GET", "/v1/registry", nil).body; string(after) != string(before) {
		t.Errorf("refused bodies changed the registry")
	}
	if n < 100 {
		t.Errorf("only %d mutations: the bodies lost their keys?", n)
	}
	t.Logf("%d refused spellings", n)
}

// The three requests found from outside (issue 25).
func TestKeySpellingsFromOutside(t *testing.T) {
	a := start(t, token)
	srp := a.do("GET", "/v1/registry/capabilities/SRP", nil)
	if srp.status != 200 {
		t.Fatalf("SRP: %d", srp.status)
	}
	var e map[string]any
	if err := json.Unmarshal(srp.body, &e); err != nil {
		t.Fatal(err)
	}
	upper := map[string]any{}
	for k, v := range e {
		if k == "identity" {
			continue
		}
		upper[strings.ToUpper(k)] = v
	}
	upperBody, _ := json.Marshal(upper)
	for _, c := range []struct{ method, path, body, key string }{
		{"POST", "/v1/discover", `{"PROMPT": "momentum strategy ranked by sharpe"}`, `"PROMPT"`},
		{"POST", "/v1/discover", `{"prompt": "momentum", "Prompt": "carry ranked by drawdown"}`, `"Prompt"`},
		{"PUT", "/v1/registry/capabilities/SRP", string(upperBody), `"`},
	} {
		r := a.do(c.method, c.path, []byte(c.body), "Authorization", "Bearer "+token)
		p := map[string]any{}
		if r.status == 400 {
			p = r.problem(t)
		}
		detail, _ := p["detail"].(string)
		if r.status != 400 || !strings.Contains(detail, c.key) {
			t.Errorf("%s %s %.80s: %d %s, want 400 naming %s", c.method, c.path, c.body, r.status, r.body, c.key)
		}
		t.Logf("%s %s → %d %s", c.method, c.path, r.status, detail)
	}
}
