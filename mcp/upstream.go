package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/server"
)

// The gateway as an MCP server (SPEC §14): /mcp/upstreams/{name} serves
// one upstream's tools under their own names, as the registry holds them
// (the approved title and description, the approved schemas and
// annotations), and every tools/call goes through the same Γ as POST
// /v1/calls. The evidence is the query's discovery id
// (?discovery=sha256:…), fixed for the session: the host ran discovery on
// the user's words and pins them for the conversation; without one, only
// an upstream's exempt reads (ground: writes) are called. The upstream's
// progress and log messages about a call are passed on to the client that
// made it. Sessions (SPEC §15) will give this endpoint a trusted state.

// UpstreamAPI is what the per-upstream endpoint needs.
type UpstreamAPI interface {
	// UpstreamTools lists the tool entries in force of the upstream.
	UpstreamTools(name string) ([]registry.Capability, error)
	// CallUpstream decides and forwards a call (calls.Service.Call).
	CallUpstream(ctx context.Context, req calls.Request) (calls.Response, error)
	ProblemOf(ctx context.Context, err error) server.Problem
}

var _ UpstreamAPI = (*server.Server)(nil)

// UpstreamSessionTimeout ends an idle session of the per-upstream
// endpoint: a session holds a little memory until then.
const UpstreamSessionTimeout = 10 * time.Minute

// UpstreamHandler serves /mcp/upstreams/{name} (the name is the path's
// last element) over streamable HTTP with sessions, so that a call's
// progress and logs stream to its client. Each POSTed message is checked
// strictly first.
func UpstreamHandler(api UpstreamAPI, version string, logger *slog.Logger) http.Handler {
	get := func(r *http.Request) *sdk.Server {
		name := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		var disc hashing.Digest
		if q := r.URL.Query().Get("discovery"); q != "" {
			d, err := hashing.Parse(q)
			if err != nil {
				return nil
			}
			disc = d
		}
		caps, err := api.UpstreamTools(name)
		if err != nil {
			return nil
		}
		return upstreamServer(api, name, disc, caps, version, logger)
	}
	return strictMessages(sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{
		MaxRequestBodyBytes: MaxFrame, Logger: quiet(logger), SessionTimeout: UpstreamSessionTimeout,
	}), MaxFrame)
}

// upstreamServer is the MCP server of one upstream's tools for one
// session's evidence.
func upstreamServer(api UpstreamAPI, name string, disc hashing.Digest, caps []registry.Capability, version string, logger *slog.Logger) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "groundgate/" + name, Title: "groundgate gateway to " + name, Version: version},
		&sdk.ServerOptions{Logger: quiet(logger), Capabilities: &sdk.ServerCapabilities{
			Logging: &sdk.LoggingCapabilities{}, Tools: &sdk.ToolCapabilities{},
		}})
	for _, c := range caps {
		s.AddTool(toolOf(c, c.Tool.Impl.Tool), upstreamCall(api, c.Name, disc))
	}
	return s
}

// toolOf is an upstream tool as the registry holds it, under name: the
// approved title and description, the approved schemas and annotations
// (never the live upstream's).
func toolOf(c registry.Capability, name string) *sdk.Tool {
	t := c.Tool
	tool := &sdk.Tool{Name: name, Title: c.Disc.Title, Description: c.Disc.Description,
		InputSchema: json.RawMessage(t.Alg.InputSchema),
		Annotations: &sdk.ToolAnnotations{
			ReadOnlyHint: t.Sem.Effect == registry.EffectRead, DestructiveHint: new(t.Sem.Destructive),
			IdempotentHint: t.Sem.Idempotent, OpenWorldHint: new(t.Sem.OpenWorld),
		}}
	if len(t.Alg.OutputSchema) > 0 {
		tool.OutputSchema = json.RawMessage(t.Alg.OutputSchema)
	}
	return tool
}

// upstreamCall forwards one tool's calls through Γ, relaying the
// upstream's progress and log messages to the calling session.
func upstreamCall(api UpstreamAPI, capName string, disc hashing.Digest) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args, err := callArguments(req)
		if err != nil {
			return nil, err
		}
		res, err := api.CallUpstream(withRelay(ctx, req), calls.Request{Tool: capName, Arguments: args, DiscoveryID: disc})
		if err != nil {
			return toolError(api.ProblemOf(ctx, err)), nil
		}
		return passThrough(res)
	}
}

// callArguments are a forwarded call's arguments: bounded, and nil for
// none.
func callArguments(req *sdk.CallToolRequest) (json.RawMessage, error) {
	args := req.Params.Arguments
	if len(args) > DefaultMaxArguments {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("%s: the arguments are %d bytes; the limit is %d", req.Params.Name, len(args), DefaultMaxArguments)}
	}
	if string(args) == "null" {
		args = nil
	}
	return args, nil
}

// withRelay passes the upstream's progress and log messages about a call
// on to the session that made it.
func withRelay(ctx context.Context, req *sdk.CallToolRequest) context.Context {
	token := req.Params.GetProgressToken()
	relay := gateway.Relay{Log: func(ctx context.Context, p *sdk.LoggingMessageParams) {
		_ = req.Session.Log(ctx, p)
	}}
	if token != nil {
		relay.Progress = func(ctx context.Context, p *sdk.ProgressNotificationParams) {
			q := *p
			q.ProgressToken = token
			_ = req.Session.NotifyProgress(ctx, &q)
		}
	}
	return gateway.WithRelay(ctx, relay)
}

// passThrough is the upstream's result of an admitted call, as it came:
// its content, isError and structured content.
func passThrough(res calls.Response) (*sdk.CallToolResult, error) {
	out, structured, err := upstreamResult(res.Result)
	if err != nil {
		return nil, err
	}
	if structured != nil {
		out.StructuredContent = structured
	}
	return out, nil
}
