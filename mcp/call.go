package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/calls"
)

// The call tool is POST /v1/calls over MCP: a call to an upstream's tool
// (SPEC §14) through the same Γ, with its arguments as the request body.
// Its refusals and failures are the other tools' (a tool error carrying
// REST's problem: 422 with the failures, 502/504 naming the upstream's
// problem type). A call that went through answers with the upstream's
// own result: its content items passed through as they came (text,
// images, resources, …), its isError kept (the tool's own error, not the
// gateway's), and as structured content {"hash": the call footprint's
// hash, "tool": "U.T", "structured_content": the upstream's structured
// content, when it gave one}. The footprint itself is REST's
// (GET /v1/calls/{hash}): it holds arguments and results, and the
// structured content stays small.

// callResult is the call tool's structured content on success.
type callResult struct {
	Hash              string          `json:"hash"`
	Tool              string          `json:"tool"`
	StructuredContent json.RawMessage `json:"structured_content,omitempty"`
}

const callOutput = `{"type": "object", "additionalProperties": false, "required": ["hash", "tool"], "properties": {` +
	`"hash": {"$ref": "` + componentRef + `Digest", "description": "the call footprint's hash (GET /v1/calls/{hash}, replay, attestation)"}, ` +
	`"tool": {"type": "string", "description": "the tool called, as UPSTREAM.TOOL"}, ` +
	`"structured_content": {"type": "object", "description": "the upstream tool's structured content, when it gave one (its content items are the result's content)"}}}`

const callInput = `{"type": "object", "additionalProperties": false, "required": ["tool"], "properties": {` +
	`"tool": {"type": "string", "minLength": 1, "description": "the tool as UPSTREAM.TOOL, a name discover returned with kind tool"}, ` +
	`"arguments": {"type": "object", "description": "the tool's arguments, as its input schema (get_capability) asks"}, ` +
	`"discovery": {"description": "the id of the discovery that found this tool (or the full evidence); only an upstream that grounds writes alone lets a read go without", ` +
	`"oneOf": [{"$ref": "` + componentRef + `Digest"}, {"$ref": "` + componentRef + `DiscoveryResult"}]}}}`

func (t tools) callTool() toolDef {
	return toolDef{
		&sdk.Tool{Name: "call", Title: "Call an upstream tool",
			Description: "Calls a tool of another MCP server through the gate. Name it as discover returned it (UPSTREAM.TOOL) and pass that discovery's id: a tool the researcher's words did not discover is refused (F3), unless its upstream exempts reads. Returns the tool's own content; structuredContent.hash is the call's footprint.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(true)}},
		callInput, callOutput,
		func(ctx context.Context, args []byte) (any, error) {
			res, err := t.api.Call(ctx, args)
			if err != nil {
				return nil, err
			}
			return callToolResult(res)
		},
	}
}

// callToolResult is the tool result of a call that went through.
func callToolResult(res calls.Response) (*sdk.CallToolResult, error) {
	if res.Call == nil {
		return nil, fmt.Errorf("mcp: a call answered without its footprint")
	}
	up, structured, err := upstreamResult(res.Result)
	if err != nil {
		return nil, err
	}
	sc := callResult{Hash: res.Call.Hash.String(), Tool: res.Call.Tool, StructuredContent: structured}
	b, err := rawJSON(sc)
	if err != nil {
		return nil, fmt.Errorf("mcp: encode the call result: %w", err)
	}
	return &sdk.CallToolResult{Content: up.Content, IsError: up.IsError, StructuredContent: b}, nil
}

// upstreamResult reads an upstream's CallToolResult (bytes the gateway
// checked and put in RFC 8785 form) for the SDK: its content items
// (never nil), its isError, and its structured content as the upstream
// sent it, bytes and all — not through a map, which would reorder it and
// round its numbers; nil when it gave none.
func upstreamResult(raw []byte) (*sdk.CallToolResult, json.RawMessage, error) {
	var up sdk.CallToolResult
	if err := json.Unmarshal(raw, &up); err != nil {
		return nil, nil, fmt.Errorf("mcp: the upstream's result: %w", err)
	}
	var sc struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &sc); err != nil {
		return nil, nil, fmt.Errorf("mcp: the upstream's result: %w", err)
	}
	if up.Content == nil {
		up.Content = []sdk.Content{}
	}
	up.StructuredContent = nil
	if len(sc.StructuredContent) > 0 && sc.StructuredContent[0] == '{' {
		return &up, sc.StructuredContent, nil
	}
	return &up, nil, nil
}
