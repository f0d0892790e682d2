package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/agent/llm"
	"github.com/groundgate/groundgate/agent/llm/llmtest"
)

func newTestOpenAI(t *testing.T, s *llmtest.Server) *OpenAIProposer {
	t.Helper()
	o, err := NewOpenAIProposer(llm.Config{BaseURL: s.BaseURL, Model: "test-model", APIKey: "k-123",
		Temperature: 0.7, Backoff: time.Millisecond, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOpenAIProposer(t *testing.T) {
	cat := builtinCatalog(t)
	f := llmtest.Start(t, func(int, map[string]any) (int, string) {
		return 200, llmtest.Completion(`{"family": "MOM_WZS", "metric": "SRP", "params": {"window": [25, 50]}, "data": "oil-spot/wti-daily.csv", "rationale": "momentum, ranked by Sharpe"}`)
	})
	o := newTestOpenAI(t, f)
	in := Input{Prompt: "Momentum on WTI by Sharpe", Data: "oil-spot/wti-daily.csv", Scope: ScopeDiscovered,
		Families: cat.Select(KindFamily, []string{"MOM_WZS"}), Metrics: cat.Select(KindMetric, []string{"SRP"})}
	p, err := o.Propose(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Family != "MOM_WZS" || p.Metric != "SRP" || p.Data != "oil-spot/wti-daily.csv" || p.Malformed != "" || p.Abstain {
		t.Fatalf("proposal %+v", p)
	}
	if b, _ := json.Marshal(p.Request()); string(b) != `{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"oil-spot/wti-daily.csv"}` {
		t.Errorf("request %s", b)
	}
	if !strings.Contains(p.Proposer, "test-model") || strings.Contains(p.Proposer, "k-123") || p.Raw == "" {
		t.Errorf("label %q raw %q", p.Proposer, p.Raw)
	}
	req := f.Requests()[0]
	if req["model"] != "test-model" || req["temperature"] != 0.7 {
		t.Errorf("request %v", req)
	}
	msgs, _ := req["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("messages %v", msgs)
	}
	user := msgs[1].(map[string]any)["content"].(string)
	for _, want := range []string{"Momentum on WTI by Sharpe", "oil-spot/wti-daily.csv", "- MOM_WZS:", "- SRP:", "discovered from the researcher's words", "window (int, required"} {
		if !strings.Contains(user, want) {
			t.Errorf("user message lacks %q:\n%s", want, user)
		}
	}
	if strings.Contains(user, "MOM_REV") {
		t.Error("the verified pipeline's message shows an undiscovered family")
	}
}

// TestOpenAIProposerAnswers: an answer that is no proposal is a
// malformed proposal (F1) carrying the raw answer; no answer at all is an
// error that aborts the run.
func TestOpenAIProposerAnswers(t *testing.T) {
	f := llmtest.Start(t, func(int, map[string]any) (int, string) {
		return 200, llmtest.Completion("not json at all")
	})
	p, err := newTestOpenAI(t, f).Propose(context.Background(), Input{Prompt: "x", Scope: ScopeAll})
	if err != nil {
		t.Fatal(err)
	}
	if p.Malformed == "" || p.Raw != "not json at all" || !strings.Contains(p.Proposer, "test-model") {
		t.Errorf("want a malformed, labelled proposal, got %+v", p)
	}

	unauth := llmtest.Start(t, func(int, map[string]any) (int, string) { return 401, `{"error": "bad key"}` })
	if _, err := newTestOpenAI(t, unauth).Propose(context.Background(), Input{Prompt: "x"}); !errors.Is(err, ErrProposer) || !errors.Is(err, llm.ErrFailed) {
		t.Errorf("401: err %v, want ErrProposer and llm.ErrFailed", err)
	}
}

func TestParseProposal(t *testing.T) {
	for _, tc := range []struct {
		in        string
		malformed bool
		family    string
		data      string
		abstain   bool
	}{
		{`{"family":"CARRY","metric":"SRP","params":{},"data":"f.csv"}`, false, "CARRY", "f.csv", false},
		{`Sure! {"family":"CARRY","metric":"SRP"} hope that helps`, false, "CARRY", "attached.csv", false},
		{`{"abstain": true, "reason": "nothing fits"}`, false, "", "", true},
		{`{"family": 3, "metric": "SRP"}`, true, "", "", false},
		{`{"family": "CARRY"}`, true, "", "", false},
		{`{"family": "CARRY", "metric": "SRP", "params": [1]}`, true, "", "", false},
		{`{"family": "CARRY", "metric": "SRP", "data": ""}`, true, "", "", false},
		{`{"family": "CARRY", "metric": `, true, "", "", false},
		{``, true, "", "", false},
	} {
		p := ParseProposal(tc.in, "attached.csv")
		if (p.Malformed != "") != tc.malformed || p.Family != tc.family || p.Abstain != tc.abstain || (!tc.malformed && !tc.abstain && p.Data != tc.data) {
			t.Errorf("ParseProposal(%q) = %+v", tc.in, p)
		}
	}
}

func TestMessagesScopes(t *testing.T) {
	cat := builtinCatalog(t)
	all := Messages(Input{Prompt: "p", Data: "d", Scope: ScopeAll, Families: cat.Families, Metrics: cat.Metrics})
	if all[0].Content != Messages(Input{Scope: ScopeDiscovered})[0].Content {
		t.Error("the system message differs between pipelines")
	}
	n := len(cat.Families) * len(cat.Metrics)
	if !strings.Contains(all[1].Content, "Valid family × metric pairs (") || !strings.Contains(all[1].Content, "every capability the server has") {
		t.Errorf("assertion-only message:\n%s", all[1].Content)
	}
	if n != 36 {
		t.Errorf("%d valid pairs, the paper has 36", n)
	}
	none := Messages(Input{Prompt: "p", Data: "d", Scope: ScopeDiscovered, Metrics: cat.Select(KindMetric, []string{"SRP"})})
	if !strings.Contains(none[1].Content, "Strategy families:\n(none)") {
		t.Errorf("no-family message:\n%s", none[1].Content)
	}
}
