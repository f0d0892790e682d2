package calls_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/gateway/upstreamtest"
	"github.com/groundgate/groundgate/policy"
)

// destructiveNeedsName is docs/policies.md's example: a destructive tool
// needs a match of confidence at least 0.7 (its name, an alias or a tag),
// not merely a keyword of its description.
var destructiveNeedsName = map[string]any{
	"smtlib": `(declare-const tool String) (declare-const confidence Real) (declare-const allow Bool)
(assert (! (=> (and allow (= tool "shop.delete_all")) (>= confidence 0.7)) :named destructive_needs_confidence_0_7))
(assert (=> (or (not (= tool "shop.delete_all")) (>= confidence 0.7)) allow))`,
	"bind":       map[string]any{"tool": "/tool", "confidence": "/grounding/confidence"},
	"allow":      "allow",
	"applies_to": []string{"tool"},
}

// discoverTerms returns the evidence of a term list.
func (g *gw) discoverTerms(terms ...string) map[string]any {
	g.t.Helper()
	return g.want(http.StatusOK, http.MethodPost, "/v1/discover", map[string]any{"terms": terms})
}

// TestGroundingPolicy: a policy reads how the evidence grounded the call
// (/grounding/mode, /grounding/confidence). Destructive shop.delete_all
// grounded by a keyword (0.5) is F11; by its exact name (1.0), an alias
// (0.9) or a tag (0.7) it runs; when two terms found it, the better match
// grounds it; other tools, and exempt reads, pass. What the policy read is
// what the footprint records: an audit re-derives it from the decision's
// grounding and the evidence the Evidence layer names.
func TestGroundingPolicy(t *testing.T) {
	g := serve(t, gateway.Limits{})
	bin := upstreamtest.Build(t)
	g.upstream("shop", map[string]any{"transport": "stdio", "command": []string{bin}, "ground": "writes"})
	g.sync("shop", true, map[string]any{
		"delete_all": map[string]any{"disc": map[string]any{"aliases": []string{"wipe the shop"}, "tags": []string{"purge"}}},
	})
	g.want(http.StatusCreated, http.MethodPut, "/v1/policies/destructive_needs_a_name", destructiveNeedsName)

	put := map[string]any{"id": "a", "value": "1"}
	cases := []struct {
		name       string
		tool       string
		args       map[string]any
		terms      []string // nil: no evidence (an exempt read)
		mode       string   // the grounding the policy reads
		confidence string
		refused    string // the failures' codes; "" admitted
	}{
		{"keyword", "shop.delete_all", nil, []string{"every stored item"}, "keyword", "0.5", "[grounding.confidence:F11]"},
		{"exact name", "shop.delete_all", nil, []string{"shop.delete_all"}, "exact", "1", ""},
		{"alias", "shop.delete_all", nil, []string{"wipe the shop"}, "alias", "0.9", ""},
		{"tag", "shop.delete_all", nil, []string{"purge"}, "tag", "0.7", ""},
		{"keyword and alias", "shop.delete_all", nil, []string{"every stored item", "wipe the shop"}, "alias", "0.9", ""},
		{"another tool by keyword", "shop.put_item", put, []string{"replacing what was there"}, "keyword", "0.5", ""},
		{"an exempt read", "shop.get_item", map[string]any{"id": "a"}, nil, "exempt", "0", ""},
		// Not discovered: F3, and the policy has no grounding to read.
		{"not discovered", "shop.delete_all", nil, []string{"replacing what was there"}, "", "", "[tool:F3 request:F11]"},
	}
	parent := g.t
	defer func() { g.t = parent }()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g.t = t
			id := ""
			if tc.terms != nil {
				ev := g.discoverTerms(tc.terms...)
				id = ev["id"].(string)
			}
			args := tc.args
			if args == nil {
				args = map[string]any{}
			}
			st, out := g.do(http.MethodPost, "/v1/calls", call(tc.tool, args, id))
			if tc.refused != "" {
				if st != http.StatusUnprocessableEntity || fmt.Sprint(codes(out)) != tc.refused {
					t.Fatalf("%d %v, want %s", st, out, tc.refused)
				}
				fs := out["failures"].([]any)
				f := fs[len(fs)-1].(map[string]any)
				if tc.mode == "" {
					if d := fmt.Sprint(f["detail"]); !strings.Contains(d, "the evidence did not discover shop.delete_all") {
						t.Fatalf("detail %q", d)
					}
					return
				}
				if f["policy"] != "destructive_needs_a_name" || fmt.Sprint(f["core"]) != "[destructive_needs_confidence_0_7]" {
					t.Fatalf("refusal %v", f)
				}
				w, _ := json.Marshal(f["witness"])
				if want := `[{"const":"confidence","pointer":"/grounding/confidence","value":` + tc.confidence + `},{"const":"tool","pointer":"/tool","value":"shop.delete_all"}]`; string(w) != want {
					t.Fatalf("witness %s, want %s", w, want)
				}
				return
			}
			if st != http.StatusOK {
				t.Fatalf("%d %v", st, out)
			}
			// The audit: the stored footprint, and the evidence its
			// Evidence layer names, give what the policy read.
			fp := g.want(http.StatusOK, http.MethodGet, "/v1/calls/"+out["call"].(map[string]any)["hash"].(string), nil)
			grounding := fp["decision"].(map[string]any)["grounding"].(string)
			layers := fp["layers"].(map[string]any)
			var ev *discover.Result
			if d, ok := fp["discovery"].(string); ok {
				if layers["evidence"] != d {
					t.Fatalf("evidence layer %v, discovery %s", layers["evidence"], d)
				}
				raw, _ := json.Marshal(g.want(http.StatusOK, http.MethodGet, "/v1/discoveries/"+d, nil))
				ev = new(discover.Result)
				if err := json.Unmarshal(raw, ev); err != nil {
					t.Fatal(err)
				}
			} else if layers["evidence"] != calls.ExemptionDigest("shop").String() {
				t.Fatalf("an exempt call's evidence layer %v", layers["evidence"])
			}
			pg := calls.PolicyGrounding(grounding, tc.tool, ev)
			if pg == nil || pg.Mode != tc.mode || pg.Confidence.String() != tc.confidence {
				t.Fatalf("re-derived grounding %+v, want %s %s", pg, tc.mode, tc.confidence)
			}
			if tc.mode == policy.GroundingExempt && grounding != calls.GroundingExempt {
				t.Fatalf("decision.grounding %s", grounding)
			}
		})
	}
}
