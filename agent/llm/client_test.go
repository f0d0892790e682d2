package llm_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundgate/groundgate/agent/llm"
	"github.com/groundgate/groundgate/agent/llm/llmtest"
)

func newTestClient(t *testing.T, s *llmtest.Server) *llm.Client {
	t.Helper()
	c, err := llm.NewClient(llm.Config{BaseURL: s.BaseURL, Model: "test-model", APIKey: "k-123",
		Temperature: 0.7, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestComplete(t *testing.T) {
	s := llmtest.Start(t, func(int, map[string]any) (int, string) { return 200, llmtest.Completion(`{"ok": true}`) })
	c := newTestClient(t, s)
	got, err := c.Complete(context.Background(), []llm.Message{{Role: "system", Content: "rules"}, {Role: "user", Content: "question"}})
	if err != nil || got != `{"ok": true}` {
		t.Fatalf("Complete = %q, %v", got, err)
	}
	if !strings.Contains(c.Name(), "test-model") || strings.Contains(c.Name(), "k-123") {
		t.Errorf("Name %q: want the model, never the key", c.Name())
	}
	req := s.Requests()[0]
	if req["model"] != "test-model" || req["temperature"] != 0.7 {
		t.Errorf("request %v", req)
	}
	if rf, _ := req["response_format"].(map[string]any); rf["type"] != "json_object" {
		t.Errorf("response_format %v", req["response_format"])
	}
	if a := s.Authorization()[0]; a != "Bearer k-123" {
		t.Errorf("Authorization %q", a)
	}
	msgs, _ := req["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["content"] != "rules" || msgs[1].(map[string]any)["role"] != "user" {
		t.Errorf("messages %v", msgs)
	}
}

// TestFallsBackWithoutJSONMode: an endpoint that refuses response_format
// is asked again without it, and never with it again — also from
// concurrent callers (go test -race).
func TestFallsBackWithoutJSONMode(t *testing.T) {
	s := llmtest.Start(t, func(n int, req map[string]any) (int, string) {
		// Refusals are bounded so that a client forgetting them fails the
		// count below instead of asking forever.
		if _, ok := req["response_format"]; ok && n <= 20 {
			return 400, `{"error": {"message": "response_format is not supported by this model"}}`
		}
		return 200, llmtest.Completion("plain")
	})
	c := newTestClient(t, s)
	if got, err := c.Complete(context.Background(), nil); err != nil || got != "plain" {
		t.Fatalf("Complete = %q, %v", got, err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if got, err := c.Complete(context.Background(), nil); err != nil || got != "plain" {
				t.Errorf("Complete = %q, %v", got, err)
			}
		})
	}
	wg.Wait()
	// One refused JSON-mode call, then five plain ones: the fallback sticks.
	if n := len(s.Requests()); n != 6 {
		t.Errorf("%d requests, want 6", n)
	}
}

func TestCompleteFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   llmtest.Answer
		want     string // the content, when no error is wanted
		requests int
	}{
		{"429 is retried", func(n int, _ map[string]any) (int, string) {
			if n == 1 {
				return 429, `{"error": "slow down"}`
			}
			return 200, llmtest.Completion("late")
		}, "late", 2},
		{"no choice is an empty answer", func(int, map[string]any) (int, string) { return 200, `{"choices": []}` }, "", 1},
		{"401 is not retried", func(int, map[string]any) (int, string) { return 401, `{"error": "bad key"}` }, "error", 1},
		{"503 until the attempts run out", func(int, map[string]any) (int, string) { return 503, `{}` }, "error", 3},
		{"an answer that is no completion", func(int, map[string]any) (int, string) { return 200, `[1, 2]` }, "error", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := llmtest.Start(t, tc.answer)
			got, err := newTestClient(t, s).Complete(context.Background(), nil)
			switch {
			case tc.want == "error" && !errors.Is(err, llm.ErrFailed):
				t.Errorf("err %v, want ErrFailed", err)
			case tc.want != "error" && (err != nil || got != tc.want):
				t.Errorf("Complete = %q, %v; want %q", got, err, tc.want)
			}
			if n := len(s.Requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
		})
	}
}

func TestNewClientChecksConfig(t *testing.T) {
	for _, cfg := range []llm.Config{
		{BaseURL: "", Model: "m"},
		{BaseURL: "ftp://x", Model: "m"},
		{BaseURL: "http://127.0.0.1:1/v1", Model: ""},
	} {
		if _, err := llm.NewClient(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}
