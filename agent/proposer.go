package agent

import (
	"context"
	"encoding/json"
)

// Scope says what the options shown to a proposer are.
type Scope string

// The two scopes, one per pipeline.
const (
	// ScopeDiscovered: the options are what discovery matched in the
	// researcher's words (the verified pipeline).
	ScopeDiscovered Scope = "discovered"
	// ScopeAll: every family and metric in the registry; every pair is
	// valid (the assertion-only pipeline).
	ScopeAll Scope = "all"
)

// Input is what a proposer is given: the researcher's prompt, the data
// file the researcher attached, and the families and metrics it may
// choose from.
type Input struct {
	Prompt   string
	Data     string
	Scope    Scope
	Families []Option
	Metrics  []Option
}

// Proposal is a proposer's answer: a request (family, metric, params,
// data), or an abstention, or — when the output could not be read as
// either — Malformed with the reason and the raw output.
type Proposal struct {
	// Proposer labels who made the proposal, e.g. ScriptedLabel.
	Proposer string         `json:"proposer"`
	Family   string         `json:"family,omitempty"`
	Metric   string         `json:"metric,omitempty"`
	Params   map[string]any `json:"params,omitempty"`
	Data     string         `json:"data,omitempty"`
	// Abstain is true when the proposer declined: nothing it was shown
	// fits the prompt.
	Abstain bool `json:"abstain,omitempty"`
	// Rationale is the proposer's reason (for the scripted proposer, the
	// rule that fired).
	Rationale string `json:"rationale,omitempty"`
	// Malformed says why the output is not a proposal (F1).
	Malformed string `json:"malformed,omitempty"`
	// Raw is an LLM's raw output, kept for audit.
	Raw string `json:"raw,omitempty"`
}

// Request returns the proposal as a request document for the gate. Params
// is always an object (possibly empty).
func (p Proposal) Request() Request {
	ps := p.Params
	if ps == nil {
		ps = map[string]any{}
	}
	return Request{Family: p.Family, Metric: p.Metric, Params: ps, Data: p.Data}
}

// requestJSON is the request document as bytes.
func (p Proposal) requestJSON() ([]byte, error) { return json.Marshal(p.Request()) }

// Proposer turns a prompt and the options it may use into a proposal.
// Implementations must be safe to call repeatedly; the harness calls them
// sequentially.
type Proposer interface {
	// Name labels every output the proposer's proposals appear in.
	Name() string
	// Propose answers one prompt. An unreadable answer is a Proposal with
	// Malformed set, not an error; an error (wrapping ErrProposer) means
	// no answer could be had at all and aborts the run.
	Propose(ctx context.Context, in Input) (Proposal, error)
}
