package llm

import (
	"context"
	"fmt"
	"strings"
)

// Advisor asks the endpoint to fix the step parameters of a pipeline
// request the gate refused and its repair rules could not fix
// (ground.Advisor, behind "repair": "llm"). It is untrusted: the gate
// keeps only changes to the failing steps' parameters and decides the
// result like any request.
type Advisor struct{ c *Client }

// NewAdvisor checks the configuration.
func NewAdvisor(cfg Config) (*Advisor, error) {
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Advisor{c: c}, nil
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
func (a *Advisor) ProposeRepair(ctx context.Context, doc []byte, failures []string) ([]byte, error) {
	user := fmt.Sprintf("Request:\n%s\n\nFailures:\n- %s", doc, strings.Join(failures, "\n- "))
	content, err := a.c.Complete(ctx, []Message{{Role: "system", Content: adviceSystem}, {Role: "user", Content: user}})
	if err != nil {
		return nil, err
	}
	obj, ok := jsonObject(content, maxAdvice)
	if !ok {
		return nil, fmt.Errorf("%w: the answer holds no JSON object of at most %d bytes", ErrFailed, maxAdvice)
	}
	return obj, nil
}
