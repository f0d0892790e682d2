package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/server"
)

// nextStep says, per failure code, what a model should do about it: the
// agent column of docs/failures.md, shortened.
var nextStep = map[ground.Code]string{
	ground.F1:  "fix the request's shape (or the call's arguments) as the detail says, then ground (or call) again",
	ground.F2:  "that name is not in the registry: use only names discover returned (they are case-sensitive)",
	ground.F3:  "that capability exists but the researcher's words did not discover it: choose among what discover returned, or ask the researcher",
	ground.F4:  "that metric was not discovered: choose among the metrics discover returned, or ask the researcher",
	ground.F7:  "the registry changed since the discovery: call discover again and ground with the new id",
	ground.F8:  "the evidence is not genuine: pass the discovery id discover returned, unchanged",
	ground.F9:  "a precondition does not hold: change the parameter the detail names",
	ground.F10: "the tool's result broke a postcondition: it was not accepted; tell the researcher rather than retrying",
	ground.F11: "a policy in force refuses this: change what the detail names, or ask the researcher",
	ground.F12: "the upstream tool changed since it was approved and is quarantined: an operator must sync the upstream; do not retry",
}

// problemAnswer is a tool's answer to err, as the server's one classifier
// decides (server.Problem.InvalidParams): a JSON-RPC invalid-params error
// carrying the problem, or a tool error carrying it.
func problemAnswer(ctx context.Context, api problemOfer, tool string, err error) (*sdk.CallToolResult, error) {
	p := api.ProblemOf(ctx, err)
	if p.InvalidParams() {
		data, _ := json.Marshal(p)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: tool + ": " + p.Detail, Data: data}
	}
	return toolError(p), nil
}

// problemOfer is the server's classifier (server.Server.ProblemOf).
type problemOfer interface {
	ProblemOf(context.Context, error) server.Problem
}

// toolError is the result a refusal or any other non-400 problem is
// answered with: isError, the problem as structured content (its failures
// exactly as REST's), and a text a model can act on.
func toolError(p server.Problem) *sdk.CallToolResult {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s", p.Title, strings.TrimPrefix(p.Type, "urn:groundgate:problem:"), p.Detail)
	seen := map[ground.Code]bool{}
	if len(p.Failures) > 1 { // one failure is the detail already
		for _, f := range p.Failures {
			fmt.Fprintf(&b, "\n- %s: %s (%s)", f.Field, f.Detail, f.Code)
		}
	}
	for _, f := range p.Failures {
		if hint, ok := nextStep[f.Code]; ok && !seen[f.Code] {
			seen[f.Code] = true
			fmt.Fprintf(&b, "\nNext (%s): %s.", f.Code, hint)
		}
	}
	for _, n := range nextCalls(p.Failures) {
		fmt.Fprintf(&b, "\nNext: call %s with %s first (its result is what the rule reads), then make this call again.", n.Tool, n.Arguments)
	}
	data, err := json.Marshal(p)
	if err != nil {
		// A Problem is plain data; this cannot fail, but if it did the
		// text alone still tells the model what went wrong.
		data = nil
	}
	res := &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: b.String()}}}
	if data != nil {
		res.StructuredContent = json.RawMessage(data)
	}
	return res
}

// nextCall is a failure's "next" member: the call that would supply a
// value a rule needs and the session's state lacks (SPEC §15).
type nextCall struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// nextCalls are the failures' next calls, each once, in order. They are
// read from the failures as JSON, as a client reads them.
func nextCalls(fs []ground.Failure) []nextCall {
	if len(fs) == 0 {
		return nil
	}
	raw, err := json.Marshal(fs)
	if err != nil {
		return nil
	}
	return nextCallsOf(raw)
}

// nextCallsOf is nextCalls of failures as JSON.
func nextCallsOf(raw []byte) []nextCall {
	var withNext []struct {
		Next *nextCall `json:"next"`
	}
	if json.Unmarshal(raw, &withNext) != nil {
		return nil
	}
	var out []nextCall
	seen := map[string]bool{}
	for _, f := range withNext {
		if f.Next == nil || f.Next.Tool == "" {
			continue
		}
		if len(f.Next.Arguments) == 0 {
			f.Next.Arguments = json.RawMessage("{}")
		}
		key := f.Next.Tool + "\x00" + string(f.Next.Arguments)
		if !seen[key] {
			seen[key] = true
			out = append(out, *f.Next)
		}
	}
	return out
}
