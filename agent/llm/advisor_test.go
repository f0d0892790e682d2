package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/agent/llm"
	"github.com/groundgate/groundgate/agent/llm/llmtest"
)

func TestAdvisor(t *testing.T) {
	fixed := `{"pipeline":[{"id":"z","capability":"wzs","params":{"window":50},"inputs":["data"]}],"output":"z"}`
	s := llmtest.Start(t, func(n int, req map[string]any) (int, string) {
		if n == 1 {
			return http.StatusOK, llmtest.Completion("Here it is:\n```json\n" + fixed + "\n```")
		}
		return http.StatusOK, llmtest.Completion("I cannot help with that.")
	})
	adv, err := llm.NewAdvisor(llm.Config{BaseURL: s.BaseURL, Model: "m", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := adv.ProposeRepair(context.Background(), []byte(`{"pipeline":[]}`), []string{"pipeline[0].params.window: wzs requires parameter \"window\""})
	if err != nil || string(got) != fixed {
		t.Fatalf("ProposeRepair = %s, %v", got, err)
	}
	msgs, _ := json.Marshal(s.Requests()[0]["messages"])
	if !strings.Contains(string(msgs), "Never change a step's id, capability or inputs") || !strings.Contains(string(msgs), "requires parameter") {
		t.Fatalf("the request does not carry the rules and the failures: %s", msgs)
	}
	if _, err := adv.ProposeRepair(context.Background(), []byte(`{}`), nil); !errors.Is(err, llm.ErrFailed) {
		t.Fatalf("an answer without JSON: %v", err)
	}
}
