package ground

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/registry/registrytest"
)

// scriptedAdvisor stands in for the LLM (no model runs here): each call
// applies the next edit to the document it is given.
type scriptedAdvisor struct {
	edits []func(doc map[string]any)
	calls int
}

func (s *scriptedAdvisor) ProposeRepair(_ context.Context, doc []byte, _ []string) ([]byte, error) {
	if s.calls >= len(s.edits) {
		return nil, errors.New("no more answers")
	}
	var d map[string]any
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	s.edits[s.calls](d)
	s.calls++
	return json.Marshal(d)
}

func advisedGate(t *testing.T, adv Advisor) (*Gate, *discover.Discoverer) {
	t.Helper()
	ctx := context.Background()
	s := registrytest.Seeded(t, filepath.Join(t.TempDir(), "g.db"), registry.Options{})
	d, err := discover.New(ctx, s, s.Engine(), discover.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(s, d, s.Engine(), WithAdvisor(adv, AdviceBudget{Proposals: 2, Timeout: 5 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	return g, d
}

func paramsOf(d map[string]any, i int) map[string]any {
	st := d["pipeline"].([]any)[i].(map[string]any)
	if st["params"] == nil {
		st["params"] = map[string]any{}
	}
	return st["params"].(map[string]any)
}

func TestAdvice(t *testing.T) {
	missing := func(t *testing.T) []byte {
		return edit(t, func(_ map[string]any, s []any) { delete(stepAt(s, 1), "params") })
	}
	cases := []struct {
		name    string
		req     func(t *testing.T) []byte
		edits   []func(map[string]any)
		admit   bool
		calls   int
		repairs int
	}{
		{"a missing parameter", missing, []func(map[string]any){func(d map[string]any) { paramsOf(d, 1)["window"] = 50.0 }}, true, 1, 1},
		{"second proposal", missing, []func(map[string]any){
			func(d map[string]any) { paramsOf(d, 1)["window"] = "fifty" },
			func(d map[string]any) { paramsOf(d, 1)["window"] = 50.0 },
		}, true, 2, 2},
		{"a capability change is discarded", missing, []func(map[string]any){
			func(d map[string]any) { d["pipeline"].([]any)[1].(map[string]any)["capability"] = "rmean" },
			func(d map[string]any) { d["metric"] = "MDD" },
		}, false, 2, 0},
		{"another step is not the advisor's", missing, []func(map[string]any){
			func(d map[string]any) { paramsOf(d, 1)["window"] = 50.0; paramsOf(d, 2)["hi"] = 3.0 },
		}, false, 1, 0},
		{"another parameter is not the advisor's", func(t *testing.T) []byte {
			return edit(t, func(_ map[string]any, s []any) { stepAt(s, 3)["params"] = map[string]any{"target_vol": "ten"} })
		}, []func(map[string]any){
			func(d map[string]any) { paramsOf(d, 3)["target_vol"] = 0.1; paramsOf(d, 3)["leverage"] = 50.0 },
		}, false, 1, 0},
		{"a value does not become a grid", missing, []func(map[string]any){
			func(d map[string]any) { paramsOf(d, 1)["window"] = []any{20.0, 50.0, 100.0} },
		}, false, 1, 0},
		{"grounding is never advised", func(t *testing.T) []byte {
			return edit(t, func(_ map[string]any, s []any) {
				delete(stepAt(s, 1), "params")
				stepAt(s, 2)["capability"] = "clip_sym"
			})
		}, []func(map[string]any){func(d map[string]any) { paramsOf(d, 1)["window"] = 50.0 }}, false, 0, 0},
		{"the budget", missing, []func(map[string]any){
			func(d map[string]any) { paramsOf(d, 1)["window"] = "a" },
			func(d map[string]any) { paramsOf(d, 1)["window"] = "b" },
			func(d map[string]any) { paramsOf(d, 1)["window"] = 50.0 },
		}, false, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			adv := &scriptedAdvisor{edits: tc.edits}
			g, d := advisedGate(t, adv)
			ev, err := d.Discover(context.Background(), discover.Query{Terms: pipelineTerms})
			if err != nil {
				t.Fatal(err)
			}
			out, err := g.Ground(context.Background(), Proposal{Request: tc.req(t), DiscoveryID: ev.ID, Repair: RepairLLM})
			if err != nil {
				t.Fatal(err)
			}
			llm := 0
			for _, r := range out.Record.Request.Repairs {
				if r.Rule == RuleLLM {
					llm++
				}
			}
			if (out.Grounded != nil) != tc.admit || adv.calls != tc.calls || (tc.admit && llm != tc.repairs) {
				t.Fatalf("admitted %v after %d calls with %d llm repairs (%+v); want %v, %d, %d\n%s",
					out.Grounded != nil, adv.calls, llm, out.Record.Request.Repairs, tc.admit, tc.calls, tc.repairs, failureText(out))
			}
			// Without "llm" the advisor is never asked.
			adv.calls = 0
			if _, err := g.Ground(context.Background(), Proposal{Request: tc.req(t), DiscoveryID: ev.ID}); err != nil || adv.calls != 0 {
				t.Fatalf("rules only: %v, %d advisor calls", err, adv.calls)
			}
		})
	}
}

func TestAdviceUnavailable(t *testing.T) {
	r := newRig(t)
	ev := r.discover(t, pipelineTerms...)
	_, err := r.gate.Ground(context.Background(), Proposal{Request: []byte(clean), DiscoveryID: ev.ID, Repair: RepairLLM})
	if !errors.Is(err, ErrNoAdvisor) {
		t.Fatalf("RepairLLM on a gate without an advisor: %v", err)
	}
}
