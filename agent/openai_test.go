package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeLLM imitates an OpenAI-compatible chat-completions endpoint on
// loopback. answer decides each reply from the decoded request.
type fakeLLM struct {
	mu       sync.Mutex
	requests []map[string]any
	auth     []string
	answer   func(n int, req map[string]any) (int, string)
}

func (f *fakeLLM) start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		var req map[string]any
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		n := len(f.requests)
		f.mu.Unlock()
		status, body := f.answer(n, req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// completion wraps content as a chat-completions answer.
func completion(content string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
	})
	return string(b)
}

func newTestOpenAI(t *testing.T, base string) *OpenAIProposer {
	t.Helper()
	o, err := NewOpenAIProposer(OpenAIConfig{BaseURL: base + "/v1", Model: "test-model", APIKey: "k-123",
		Temperature: 0.7, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOpenAIProposer(t *testing.T) {
	cat := builtinCatalog(t)
	f := &fakeLLM{answer: func(int, map[string]any) (int, string) {
		return 200, completion(`{"family": "MOM_WZS", "metric": "SRP", "params": {"window": [25, 50]}, "data": "oil-spot/wti-daily.csv", "rationale": "momentum, ranked by Sharpe"}`)
	}}
	srv := f.start(t)
	o := newTestOpenAI(t, srv.URL)
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
	req := f.requests[0]
	if req["model"] != "test-model" || req["temperature"] != 0.7 {
		t.Errorf("request %v", req)
	}
	if rf, _ := req["response_format"].(map[string]any); rf["type"] != "json_object" {
		t.Errorf("response_format %v", req["response_format"])
	}
	if f.auth[0] != "Bearer k-123" {
		t.Errorf("Authorization %q", f.auth[0])
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

func TestOpenAIFallsBackWithoutJSONMode(t *testing.T) {
	f := &fakeLLM{answer: func(n int, req map[string]any) (int, string) {
		if _, ok := req["response_format"]; ok {
			return 400, `{"error": {"message": "response_format is not supported by this model"}}`
		}
		return 200, completion("```json\n{\"abstain\": true, \"reason\": \"no family fits\"}\n```")
	}}
	srv := f.start(t)
	o := newTestOpenAI(t, srv.URL)
	for i := 0; i < 2; i++ {
		p, err := o.Propose(context.Background(), Input{Prompt: "trend following", Scope: ScopeAll})
		if err != nil {
			t.Fatal(err)
		}
		if !p.Abstain || p.Rationale != "no family fits" {
			t.Fatalf("proposal %+v", p)
		}
	}
	// One refused JSON-mode call, then two plain ones: the fallback sticks.
	if len(f.requests) != 3 {
		t.Errorf("%d requests, want 3", len(f.requests))
	}
}

func TestOpenAIRetriesThenFails(t *testing.T) {
	f := &fakeLLM{answer: func(n int, _ map[string]any) (int, string) {
		if n == 1 {
			return 429, `{"error": "slow down"}`
		}
		return 200, completion(`not json at all`)
	}}
	srv := f.start(t)
	o := newTestOpenAI(t, srv.URL)
	p, err := o.Propose(context.Background(), Input{Prompt: "x", Scope: ScopeAll})
	if err != nil {
		t.Fatal(err)
	}
	if p.Malformed == "" || p.Raw != "not json at all" {
		t.Errorf("want a malformed proposal, got %+v", p)
	}

	unauth := &fakeLLM{answer: func(int, map[string]any) (int, string) { return 401, `{"error": "bad key"}` }}
	o = newTestOpenAI(t, unauth.start(t).URL)
	if _, err := o.Propose(context.Background(), Input{Prompt: "x"}); !errors.Is(err, ErrProposer) {
		t.Errorf("401: err %v, want ErrProposer", err)
	}
	down := &fakeLLM{answer: func(int, map[string]any) (int, string) { return 503, `{}` }}
	o = newTestOpenAI(t, down.start(t).URL)
	if _, err := o.Propose(context.Background(), Input{Prompt: "x"}); !errors.Is(err, ErrProposer) || len(down.requests) != 3 {
		t.Errorf("503: err %v after %d requests, want ErrProposer after 3", err, len(down.requests))
	}
}

func TestNewOpenAIProposerChecksConfig(t *testing.T) {
	for _, cfg := range []OpenAIConfig{
		{BaseURL: "", Model: "m"},
		{BaseURL: "ftp://x", Model: "m"},
		{BaseURL: "http://127.0.0.1:1/v1", Model: ""},
	} {
		if _, err := NewOpenAIProposer(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
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
