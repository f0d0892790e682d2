package airline

import (
	"context"
	"encoding/json"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerName and ServerVersion are the MCP server's serverInfo: the port
// of τ-bench at commit 59a200c.
const (
	ServerName    = "airline-mcp"
	ServerVersion = "tau-bench-59a200c"
)

func ptr[T any](v T) *T { return &v }

// Annotations are the tool's MCP hints: the reads (and calculate, think,
// transfer_to_human_agents, which touch nothing) read-only; the writes
// not, destructive when they change or remove what was there
// (cancel_reservation and the three updates), not when they only add (a
// booking, a certificate).
func Annotations(name string) *sdk.ToolAnnotations {
	if !Writes[name] {
		return &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	}
	destructive := name != "book_reservation" && name != "send_certificate"
	return &sdk.ToolAnnotations{DestructiveHint: ptr(destructive), OpenWorldHint: ptr(false)}
}

// NewServer serves w's 14 tools, named, described and with input schemas
// as tools.json gives them. A call answers the tool's string as text
// content, byte for byte as τ-bench's tool returns it; τ-bench's errors
// ("Error: …") are the same text with isError set. Calls are serialised:
// one world, changed by the writes.
func NewServer(w *World, opts *sdk.ServerOptions) (*sdk.Server, error) {
	specs, err := Specs()
	if err != nil {
		return nil, err
	}
	s := sdk.NewServer(&sdk.Implementation{Name: ServerName, Version: ServerVersion}, opts)
	var mu sync.Mutex
	for _, spec := range specs {
		name := spec.Name
		s.AddTool(&sdk.Tool{
			Name:        name,
			Description: spec.Description,
			InputSchema: json.RawMessage(spec.Parameters),
			Annotations: Annotations(name),
		}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			mu.Lock()
			out := w.Call(name, req.Params.Arguments)
			mu.Unlock()
			return &sdk.CallToolResult{
				Content: []sdk.Content{&sdk.TextContent{Text: out}},
				IsError: IsError(out),
			}, nil
		})
	}
	return s, nil
}
