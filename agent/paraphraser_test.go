package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestOpenAIParaphraser(t *testing.T) {
	long := strings.Repeat("x", 81)
	llm := &fakeLLM{answer: func(n int, req map[string]any) (int, string) {
		if n == 1 {
			return http.StatusOK, completion(`{"phrases": ["Trend Persistence", "momentum", "  ride   the winners ", "` + long + `", "trend persistence"]}`)
		}
		return http.StatusOK, completion("no idea")
	}}
	srv := llm.start(t)
	p, err := NewOpenAIParaphraser(OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "m", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Paraphrase(context.Background(), "MOM_WZS", "family", "Per-column momentum", []string{"momentum"})
	if err != nil {
		t.Fatal(err)
	}
	// Lower-cased and spaced once; the known phrase, the duplicate and the
	// over-long phrase dropped.
	if want := []string{"trend persistence", "ride the winners"}; !slices.Equal(got, want) {
		t.Errorf("Paraphrase = %q; want %q", got, want)
	}
	msgs, _ := json.Marshal(llm.requests[0]["messages"])
	if !strings.Contains(string(msgs), "Per-column momentum") || !strings.Contains(string(msgs), "Never name a different strategy") {
		t.Errorf("the request does not carry the description and the rules: %s", msgs)
	}
	if _, err := p.Paraphrase(context.Background(), "X", "family", "d", nil); !errors.Is(err, ErrProposer) {
		t.Errorf("an answer without the object: %v", err)
	}
}
