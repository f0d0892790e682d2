package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/agent/llm"
	"github.com/groundgate/groundgate/agent/llm/llmtest"
)

func TestParaphraser(t *testing.T) {
	long := strings.Repeat("x", 81)
	s := llmtest.Start(t, func(n int, req map[string]any) (int, string) {
		if n == 1 {
			return http.StatusOK, llmtest.Completion(`{"phrases": ["Trend Persistence", "momentum", "  ride   the winners ", "` + long + `", "trend persistence"]}`)
		}
		return http.StatusOK, llmtest.Completion("no idea")
	})
	p, err := llm.NewParaphraser(llm.Config{BaseURL: s.BaseURL, Model: "m", MaxAttempts: 1})
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
	msgs, _ := json.Marshal(s.Requests()[0]["messages"])
	if !strings.Contains(string(msgs), "Per-column momentum") || !strings.Contains(string(msgs), "Never name a different strategy") {
		t.Errorf("the request does not carry the description and the rules: %s", msgs)
	}
	if _, err := p.Paraphrase(context.Background(), "X", "family", "d", nil); !errors.Is(err, llm.ErrFailed) {
		t.Errorf("an answer without the object: %v", err)
	}
}
