// Package mcp serves groundgate to agents over the Model Context Protocol
// (SPEC §13), with the official Go SDK: tools discover, ground, execute,
// replay, diff, get_capability and call (an upstream tool through the
// gateway, SPEC §14), and capabilities and footprints as
// resources. Every tool calls the REST API's own operation (server.Server's
// Discover, Ground, …) with the tool's arguments as the request body, so
// the gate, its checks and its refusals are the ones REST has: there is no
// second code path.
//
// Errors follow REST's split. What REST answers 400 (arguments that are
// not the documented shape) is a JSON-RPC invalid-params error; anything
// else REST answers with a problem (the gate's 422 refusal with its
// failures, a 404, a 409 drift, a 503 busy) is a tool result with isError
// set, whose structured content is that same problem and whose text tells
// the model what to do next.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/internal/loglevel"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/server"
)

// API is what the tools call: the REST API's operations (server.Server).
type API interface {
	Discover(ctx context.Context, body []byte) (discover.Result, error)
	Ground(ctx context.Context, body []byte) (server.Grounding, error)
	Execute(ctx context.Context, body []byte) (*execution.Footprint, error)
	Footprint(ctx context.Context, hash string) (*execution.Footprint, error)
	Replay(ctx context.Context, hash string) (*execution.ReplayReport, error)
	Diff(ctx context.Context, a, b string) (*execution.DiffReport, error)
	Capability(ctx context.Context, name string) (registry.Capability, error)
	// Call is POST /v1/calls: a call to an upstream tool through Γ.
	Call(ctx context.Context, body []byte) (calls.Response, error)
	ProblemOf(ctx context.Context, err error) server.Problem
}

var _ API = (*server.Server)(nil)

// Options configure the MCP server.
type Options struct {
	// Version is what the server reports as its implementation version.
	Version string
	// MaxArguments bounds one tool call's arguments in bytes (default
	// DefaultMaxArguments, REST's body limit): larger ones are refused
	// before anything decodes them.
	MaxArguments int
	// Logger receives the SDK's log (discarded when nil).
	Logger *slog.Logger
}

// DefaultMaxArguments is REST's default body limit.
const DefaultMaxArguments = 1 << 20

// MaxFrame bounds one JSON-RPC message on stdio, and one HTTP request body
// on /mcp: above the arguments' limit, so that arguments a little too
// large get a clear invalid-params error rather than a closed connection.
const MaxFrame = 4 << 20

// instructions is what an agent host shows the model about this server.
const instructions = `groundgate runs trading-research tools only when the researcher's own words name them.
Workflow: discover (pass the researcher's prompt verbatim) → ground (a request naming only what discover found, with the discovery id) → execute (the grounding id) → replay/diff to check results.
A refused ground lists each failing field with a code (F1–F11) and how to fix it; never guess a capability name discover did not return.`

// New builds the MCP server over api.
func New(api API, opt Options) (*sdk.Server, error) {
	if opt.MaxArguments <= 0 {
		opt.MaxArguments = DefaultMaxArguments
	}
	opt.Logger = quiet(opt.Logger)
	cs, err := parseComponents(server.OpenAPI)
	if err != nil {
		return nil, err
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "groundgate", Title: "groundgate", Version: opt.Version},
		&sdk.ServerOptions{Instructions: instructions, Logger: opt.Logger, Capabilities: capabilities()})
	t := tools{api: api, max: opt.MaxArguments}
	for _, d := range t.defs() {
		in, err := cs.input(d.in)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %s input: %w", d.tool.Name, err)
		}
		out, err := cs.output(d.out)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %s output: %w", d.tool.Name, err)
		}
		// As JSON, encoded once: the SDK marshals every tool's schemas
		// on every tools/list, and over stateless HTTP each request is a
		// new session, so a map would be walked and its keys sorted
		// again per request (33 KB of schemas). tools/list answers the
		// same bytes.
		if d.tool.InputSchema, err = rawJSON(in); err != nil {
			return nil, fmt.Errorf("mcp: tool %s input: %w", d.tool.Name, err)
		}
		if d.tool.OutputSchema, err = rawJSON(out); err != nil {
			return nil, fmt.Errorf("mcp: tool %s output: %w", d.tool.Name, err)
		}
		s.AddTool(d.tool, t.handler(d.call))
	}
	addResources(s, api)
	return s, nil
}

// capabilities is what initialize advertises, set here rather than left to
// the SDK to infer: tools and resources, without listChanged (both lists
// are fixed for the server's life, and stateless HTTP has no stream to
// notify on) or subscribe; logging, the SDK's default (logging/setLevel is
// accepted; the server sends no log messages). No prompts and no
// completions: completion/complete answers -32601, method not found.
func capabilities() *sdk.ServerCapabilities {
	return &sdk.ServerCapabilities{
		Logging:   &sdk.LoggingCapabilities{},
		Resources: &sdk.ResourceCapabilities{},
		Tools:     &sdk.ToolCapabilities{},
	}
}

// rawJSON is v's JSON as the SDK writes it: without encoding/json's HTML
// escaping (a schema's "a > b" stays so).
func rawJSON(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// HTTPHandler serves s over streamable HTTP, statelessly: no session is
// kept between requests, so memory does not grow with the number of
// clients, and every request is answered with plain JSON. Each POSTed
// message is checked strictly first (envelope.go).
func HTTPHandler(s *sdk.Server, logger *slog.Logger) http.Handler {
	return strictMessages(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, MaxRequestBodyBytes: MaxFrame, Logger: quiet(logger),
	}), MaxFrame)
}

// quiet passes on the SDK's warnings and errors only: it logs every
// connection at info, which for stateless HTTP is every request, and the
// server's access log already has those.
func quiet(l *slog.Logger) *slog.Logger { return loglevel.AtLeast(l, slog.LevelWarn) }

// call runs one tool on its arguments: the value to return, or an error
// the API maps to a problem.
type call func(ctx context.Context, args []byte) (any, error)

type toolDef struct {
	tool *sdk.Tool
	in   string // the input schema: a component's name, or JSON (component references allowed)
	out  string // the output schema: a component's name, or JSON (component references allowed)
	call call
}

type tools struct {
	api API
	max int
}

func (t tools) defs() []toolDef {
	digest := func(what string) string {
		return `{"$ref": "` + componentRef + `Digest", "description": "` + what + `"}`
	}
	obj := func(props map[string]string) string {
		var b strings.Builder
		b.WriteString(`{"type": "object", "additionalProperties": false, "required": [`)
		names := slices.Sorted(maps.Keys(props))
		for i, n := range names {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", n)
		}
		b.WriteString(`], "properties": {`)
		for i, n := range names {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q: %s", n, props[n])
		}
		b.WriteString("}}")
		return b.String()
	}
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	return []toolDef{
		{&sdk.Tool{Name: "discover", Title: "Discover capabilities",
			Description: "Call this first. Finds the strategy families, metrics and pipeline steps that the researcher's own words name, with evidence. Pass the researcher's prompt verbatim as `prompt`; ground with the returned `id`.",
			Annotations: &sdk.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(false)}},
			"Query", "DiscoveryResult",
			func(ctx context.Context, args []byte) (any, error) { return t.api.Discover(ctx, args) }},
		{&sdk.Tool{Name: "ground", Title: "Ground a request",
			Description: "The grounding gate. Checks a request (family + metric + params + data, or a pipeline) against a discovery: every name must have been discovered, parameters must fit, policies must allow it. Returns an admitted grounding with its `id`, or an error listing each failing field with an F-code and how to fix it.",
			Annotations: &sdk.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(false)}},
			"GroundRequest", "Grounding",
			func(ctx context.Context, args []byte) (any, error) { return t.api.Ground(ctx, args) }},
		{&sdk.Tool{Name: "execute", Title: "Execute a grounding",
			Description: "Runs exactly what an admitted grounding approved (pass its `id` as `grounding`). Returns the footprint: scores per parameter set, the selected one, and the execution `hash`.",
			Annotations: &sdk.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(false)}},
			obj(map[string]string{"grounding": digest("the id of an admitted grounding")}), "Footprint",
			func(ctx context.Context, args []byte) (any, error) { return t.api.Execute(ctx, args) }},
		{&sdk.Tool{Name: "replay", Title: "Replay an execution",
			Description: "Re-runs a stored execution from its grounding and compares all eight layer digests with the stored ones: identical means reproduced.",
			Annotations: readOnly},
			obj(map[string]string{"hash": digest("an execution hash")}), "ReplayReport",
			func(ctx context.Context, args []byte) (any, error) {
				var a struct {
					Hash string `json:"hash"`
				}
				if err := t.decode(args, &a); err != nil {
					return nil, err
				}
				return t.api.Replay(ctx, a.Hash)
			}},
		{&sdk.Tool{Name: "diff", Title: "Diff two executions",
			Description: "Compares two stored executions layer by layer and says which layers (registry, request, data, …) differ.",
			Annotations: readOnly},
			obj(map[string]string{"a": digest("an execution hash"), "b": digest("another execution hash")}), "DiffReport",
			func(ctx context.Context, args []byte) (any, error) {
				var a struct {
					A string `json:"a"`
					B string `json:"b"`
				}
				if err := t.decode(args, &a); err != nil {
					return nil, err
				}
				return t.api.Diff(ctx, a.A, a.B)
			}},
		{&sdk.Tool{Name: "get_capability", Title: "Read a capability",
			Description: "Reads one registry entry by its exact name (as discover returned it): description, parameters with bounds and defaults, identity.",
			Annotations: readOnly},
			obj(map[string]string{"name": `{"type": "string", "minLength": 1, "description": "a capability name, e.g. MOM_WZS"}`}), "Capability",
			func(ctx context.Context, args []byte) (any, error) {
				var a struct {
					Name string `json:"name"`
				}
				if err := t.decode(args, &a); err != nil {
					return nil, err
				}
				return t.api.Capability(ctx, a.Name)
			}},
		t.callTool(),
	}
}

// decode reads a tool's arguments as REST reads a body: strictly, through
// the API, so that a wrong shape is the same 400 problem.
func (t tools) decode(args []byte, v any) error {
	return server.DecodeObject(args, v)
}

// handler adapts a call to the SDK: the size bound, the result as
// structured content (and its JSON as text, for hosts that read only
// text), and errors split as the package documentation says.
func (t tools) handler(c call) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args := []byte(req.Params.Arguments)
		if len(args) > t.max {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("%s: the arguments are %d bytes; the limit is %d", req.Params.Name, len(args), t.max)}
		}
		if len(args) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		out, err := c(ctx, args)
		if res, ok := out.(*sdk.CallToolResult); ok && err == nil {
			return res, nil // the call tool's: made as it says (call.go)
		}
		if err != nil {
			return problemAnswer(ctx, t.api, req.Params.Name, err)
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("mcp: encode the %s result: %w", req.Params.Name, err)
		}
		return &sdk.CallToolResult{StructuredContent: json.RawMessage(b), Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
	}
}
