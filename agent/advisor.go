package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// OpenAIAdvisor asks an OpenAI-compatible chat-completions endpoint to fix
// the step parameters of a pipeline request the gate refused and its
// repair rules could not fix (ground.Advisor, behind "repair": "llm"). It
// is untrusted: the gate keeps only changes to the failing steps'
// parameters and decides the result like any request.
type OpenAIAdvisor struct{ o *OpenAIProposer }

// NewOpenAIAdvisor checks the configuration.
func NewOpenAIAdvisor(cfg OpenAIConfig) (*OpenAIAdvisor, error) {
	o, err := NewOpenAIProposer(cfg)
	if err != nil {
		return nil, err
	}
	return &OpenAIAdvisor{o: o}, nil
}

// maxAdvice bounds the document an answer may hold.
const maxAdvice = 64 << 10

const adviceSystem = `You repair a research pipeline request that a grounding gate refused.
The request is JSON: {"pipeline": [steps {"id","capability","params","inputs"}], "output", "metric", "data"}.
Fix ONLY the "params" of the steps the failures name (pipeline[i]...): give a missing required parameter a sensible value, replace a value of the wrong type or out of bounds.
Never change a step's id, capability or inputs, never add or remove steps, never change output, metric or data.
Answer with the whole repaired request as one JSON object and nothing else.`

// ProposeRepair sends the document and the failures and returns the JSON
// object the answer holds.
func (a *OpenAIAdvisor) ProposeRepair(ctx context.Context, doc []byte, failures []string) ([]byte, error) {
	user := fmt.Sprintf("Request:\n%s\n\nFailures:\n- %s", doc, strings.Join(failures, "\n- "))
	content, err := a.o.complete(ctx, []ChatMessage{{Role: "system", Content: adviceSystem}, {Role: "user", Content: user}})
	if err != nil {
		return nil, err
	}
	obj, ok := jsonObject(content, maxAdvice)
	if !ok {
		return nil, fmt.Errorf("%w: the answer holds no JSON object of at most %d bytes", ErrProposer, maxAdvice)
	}
	return obj, nil
}

// jsonObject is the JSON object an answer holds — from its first "{" to
// its last "}", so prose or a code fence around it does not matter — when
// it is valid and at most max bytes.
func jsonObject(content string, max int) ([]byte, bool) {
	s := strings.TrimSpace(content)
	i, j := strings.Index(s, "{"), strings.LastIndex(s, "}")
	if i < 0 || j < i || j-i+1 > max || !json.Valid([]byte(s[i:j+1])) {
		return nil, false
	}
	return []byte(s[i : j+1]), true
}
