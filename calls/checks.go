package calls

import (
	"fmt"
	"sort"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
)

// Contracts compiles a tool entry's contract once per identity
// (contract.Cache).
type Contracts interface {
	Program(identity, kind string, params []contract.Param, con *contract.Contract) (*contract.Program, error)
}

var _ Contracts = (*contract.Cache)(nil)

// callError is an upstream's failure as a footprint records it: the
// status and problem type gateway.Kind gives it (502 and
// upstream-unavailable for what it does not know), and the words.
func callError(err error) CallError {
	status, kind, ok := gateway.Kind(err)
	if !ok {
		status, kind = 502, "upstream-unavailable"
	}
	return CallError{Status: status, Type: kind, Detail: err.Error()}
}

// preconditionsOf is F9: the contract's pre clauses over the tool and its
// arguments (contract.ToolKeys) and, in a session, its state, facts and
// now (SPEC §15).
func (s *Service) preconditionsOf(d *decision) ([]ground.Failure, error) {
	return s.contract(d, contract.Pre, nil)
}

// postconditionsOf is F10's contract half: the post clauses, which also
// read the result.
func (s *Service) postconditionsOf(d *decision, result []byte) ([]ground.Failure, error) {
	return s.contract(d, contract.Post, result)
}

// sessionOf is what a decision's rules read of its session: the state
// ({} outside one), the host's facts and now (absent outside one),
// decoded once for the call's preconditions, policies and postconditions.
func (s *Service) sessionOf(d *decision) (*contract.Session, error) {
	return s.sessions.Decode(d.state, d.facts, d.now)
}

func (s *Service) contract(d *decision, ph contract.Phase, result []byte) ([]ground.Failure, error) {
	c := d.capb
	con := c.Tool.Sem.Contract
	if con.Empty() || len(con.Clauses(ph)) == 0 {
		return nil, nil
	}
	if s.opts.Contracts == nil {
		return nil, fmt.Errorf("calls: %s has a contract and no contract cache is configured", c.Name)
	}
	prog, err := s.opts.Contracts.Program(c.Identity.String(), contract.ToolKind, nil, con)
	if err != nil {
		return nil, fmt.Errorf("calls: the contract of %s: %w", c.Name, err)
	}
	sess, err := s.sessionOf(d)
	if err != nil {
		return nil, fmt.Errorf("calls: the session of a call to %s: %w", c.Name, err)
	}
	st, err := contract.ToolStateIn(c.Name, d.args, result, sess)
	if err != nil {
		// The result decoded once already; a state it cannot make is the
		// upstream's odd JSON: every clause of the phase fails on it.
		st = contract.State{}
	}
	code, field := ground.F9, "arguments"
	if ph == contract.Post {
		code, field = ground.F10, "result"
	}
	var out []ground.Failure
	for _, v := range contract.Failed(prog.Eval(c.Name, ph, st, nil)) {
		out = append(out, ground.Failure{Field: field, Code: code, Codes: []ground.Code{code}, Value: v.Clause, Detail: v.Describe(string(code)), Next: v.Next})
	}
	return out, nil
}

// policyRequest is what policies read of a call: the tool, its arguments,
// its grounding and, in a session, the session (derived constants, /now).
// A session that does not decode is left out: a policy that reads it then
// refuses the call as missing.
func (s *Service) policyRequest(d *decision) policy.Request {
	r := policy.Request{Tool: d.capb.Name, Arguments: d.args, Grounding: d.ground}
	if sess, err := s.sessionOf(d); err == nil {
		r.Session = sess
	}
	return r
}

// toolMatch is the match of the evidence that grounds a call to tool: of
// the tool matches naming it, the one with the highest confidence (the
// first in the evidence's order on a tie); nil when none does.
func toolMatch(ev *discover.Result, tool string) *discover.Match {
	if ev == nil {
		return nil
	}
	var best *discover.Match
	for i, m := range ev.Matches {
		if m.Name == tool && m.Kind == registry.KindTool && (best == nil || m.Confidence > best.Confidence) {
			best = &ev.Matches[i]
		}
	}
	return best
}

// PolicyGrounding is how a call to tool was grounded as policies read it
// (/grounding/mode, /grounding/confidence): for grounding GroundingExempt,
// mode "exempt" and confidence 0; else the mode and confidence of
// toolMatch in the evidence ev, nil when no match names the tool. It
// reads only what the footprint records, so an audit re-derives it: the
// decision's grounding, the tool, and the evidence the Evidence layer
// names (GET /v1/discoveries/{discovery}).
func PolicyGrounding(grounding, tool string, ev *discover.Result) *policy.Grounding {
	if grounding == GroundingExempt {
		g := policy.ExemptGrounding()
		return &g
	}
	m := toolMatch(ev, tool)
	if m == nil {
		return nil
	}
	return &policy.Grounding{Mode: string(m.Mode), Confidence: policy.Num(m.Confidence)}
}

// screenResult screens the text items of a CallToolResult.
func screenResult(raw []byte, screen func(string) []gateway.Finding) []gateway.Finding {
	var top struct {
		Content []jsontext.Value `json:"content"`
	}
	if hashing.DecodeFields(raw, &top) != nil {
		return nil
	}
	var out []gateway.Finding
	for i, c := range top.Content {
		var item struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if hashing.DecodeFields(c, &item) != nil || item.Type != "text" {
			continue
		}
		for _, f := range screen(item.Text) {
			f.Field = fmt.Sprintf("content[%d].text", i)
			out = append(out, f)
		}
	}
	return out
}

// members returns an object's top-level members, each in RFC 8785 form.
func members(obj []byte) map[string]string {
	var m map[string]jsontext.Value
	if hashing.DecodePart(obj, &m) != nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		c, err := hashing.CanonicalizeJSON(v)
		if err != nil {
			c = v
		}
		out[k] = string(c)
	}
	return out
}

// sortedUnion returns the keys of a and b, sorted, once each.
func sortedUnion(a, b map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
