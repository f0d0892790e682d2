package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/server"
)

// Agents over MCP (SPEC §15): /mcp with a session's token serves that
// session, and `groundgate mcp --session WORDS` serves one on stdio. The
// session's MCP server lists its grounded tools, named U.T as REST names
// them (MCP tool names allow [A-Za-z0-9_.-], and an upstream's name is
// [a-z0-9_-]): every upstream tool some turn's evidence matched, and the
// exempt reads, with the approved descriptions and schemas of the entries
// in force. A call goes through session.Service.Call, REST's own: the
// session's evidence, state, facts and clock decide it. A refusal is a
// tool error whose structured content is REST's problem (the failures,
// and the session's record of the call); an admitted call answers with
// the upstream's result as it came. In a session opened with
// agent_discovery, a discover tool adds a turn of the agent's own words
// (recorded "by": "agent" in the session's turns).
//
// Each session has one SDK server, made when a client first connects and
// kept while clients use it (Sessions bounds how many). When a turn adds
// tools — the host's (POST /v1/sessions/{id}/turns: Changed) or the
// agent's discover — the server's tool set changes and the SDK sends its
// clients notifications/tools/list_changed. A tools/list re-reads the
// session's tools first, so a list is never older than the registry and
// the turns it is asked after.

// SessionAPI is what a session's MCP server needs (server.Server).
type SessionAPI interface {
	SessionTools(ctx context.Context, id hashing.Digest) (server.SessionTools, error)
	SessionTurn(ctx context.Context, id hashing.Digest, prompt string) (discover.Result, error)
	SessionCall(ctx context.Context, id hashing.Digest, tool string, args json.RawMessage) (calls.Response, error)
	ProblemOf(ctx context.Context, err error) server.Problem
}

var _ SessionAPI = (*server.Server)(nil)

// SessionOptions configure Sessions.
type SessionOptions struct {
	// Version is what the servers report as their implementation version.
	Version string
	Logger  *slog.Logger
	// MaxServers bounds the sessions served at once (DefaultMaxServers):
	// past it, the least recently used session's server is dropped, idle
	// ones first, and its clients must connect again.
	MaxServers int
	// Idle ends an MCP client's session after this long without a
	// request (DefaultSessionIdle), and lets its server go.
	Idle time.Duration
}

// DefaultMaxServers is SessionOptions.MaxServers' default.
const DefaultMaxServers = 1024

// DefaultSessionIdle is SessionOptions.Idle's default: a conversation
// pauses longer than a call takes.
const DefaultSessionIdle = 30 * time.Minute

// Sessions serves groundgate sessions over MCP.
type Sessions struct {
	api SessionAPI
	opt SessionOptions
	log *slog.Logger

	mu      sync.Mutex
	servers map[hashing.Digest]*sessionServer
	uses    atomic.Uint64 // orders the servers' uses
}

// sessionServer is one session's SDK server and the tools it lists.
type sessionServer struct {
	id   hashing.Digest
	srv  *sdk.Server
	last atomic.Int64  // unix nanoseconds of the last request
	used atomic.Uint64 // Sessions.uses at the last request

	mu       sync.Mutex // one sync at a time
	tools    map[string]hashing.Digest
	discover bool
}

// NewSessions serves the sessions of api.
func NewSessions(api SessionAPI, opt SessionOptions) *Sessions {
	if opt.MaxServers <= 0 {
		opt.MaxServers = DefaultMaxServers
	}
	if opt.Idle <= 0 {
		opt.Idle = DefaultSessionIdle
	}
	return &Sessions{api: api, opt: opt, log: quiet(opt.Logger), servers: map[hashing.Digest]*sessionServer{}}
}

// Handler serves over streamable HTTP the session each request's context
// names (server.MCPSession: MountSessionMCP resolves the token), with MCP
// sessions, so that list changes and a call's progress reach the client.
// A client's MCP session is bound to the groundgate session that opened
// it: another session's token cannot use it (the SDK's user check).
func (h *Sessions) Handler() http.Handler {
	get := func(r *http.Request) *sdk.Server {
		id, ok := server.MCPSession(r.Context())
		if !ok {
			return nil
		}
		s, err := h.Server(r.Context(), id)
		if err != nil {
			h.log.Warn("session over MCP", "session", id.String(), "err", err)
			return nil
		}
		return s
	}
	sh := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{
		MaxRequestBodyBytes: MaxFrame, Logger: h.log, SessionTimeout: h.opt.Idle,
	})
	verify := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		id, ok := server.MCPSession(ctx)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: id.String()}, nil
	}
	return strictMessages(auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(sh), MaxFrame)
}

// Server returns session id's MCP server, made and its tools listed on
// first use.
func (h *Sessions) Server(ctx context.Context, id hashing.Digest) (*sdk.Server, error) {
	now := time.Now().UnixNano()
	h.mu.Lock()
	ss := h.servers[id]
	h.mu.Unlock()
	if ss != nil {
		ss.last.Store(now)
		ss.used.Store(h.uses.Add(1))
		return ss.srv, nil
	}
	st, err := h.api.SessionTools(ctx, id)
	if err != nil {
		return nil, err
	}
	ss = h.newServer(id, st.AgentDiscovery && !st.Closed)
	ss.last.Store(now)
	ss.used.Store(h.uses.Add(1))
	ss.mu.Lock()
	h.apply(ss, st)
	ss.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur := h.servers[id]; cur != nil {
		return cur.srv, nil // made meanwhile by another request
	}
	h.evict(now)
	h.servers[id] = ss
	return ss.srv, nil
}

// evict makes room for one more server: the idle ones without clients
// go, then the least recently used ones (their clients' sessions are
// closed: they connect again). Called with h.mu held.
func (h *Sessions) evict(now int64) {
	if len(h.servers) < h.opt.MaxServers {
		return
	}
	live := map[*sessionServer]bool{}
	for _, ss := range h.servers {
		for range ss.srv.Sessions() {
			live[ss] = true
			break
		}
	}
	for id, ss := range h.servers {
		if !live[ss] && now-ss.last.Load() > int64(h.opt.Idle) {
			delete(h.servers, id)
		}
	}
	if len(h.servers) < h.opt.MaxServers {
		return
	}
	byUse := slices.Collect(maps.Values(h.servers))
	slices.SortFunc(byUse, func(a, b *sessionServer) int {
		if live[a] != live[b] {
			if live[a] {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.used.Load(), b.used.Load())
	})
	for _, ss := range byUse[:len(h.servers)-h.opt.MaxServers+1] {
		delete(h.servers, ss.id)
		for cs := range ss.srv.Sessions() {
			_ = cs.Close()
		}
	}
}

// Changed re-reads session id's tools when a client is connected to it:
// a turn was added. When the set changed, the SDK tells the clients.
func (h *Sessions) Changed(ctx context.Context, id hashing.Digest) {
	h.mu.Lock()
	ss := h.servers[id]
	h.mu.Unlock()
	if ss == nil {
		return
	}
	if _, err := h.sync(ctx, ss); err != nil {
		h.log.Warn("session tools not re-read", "session", id.String(), "err", err)
	}
}

// sessionInstructions is what an agent host shows the model.
const sessionInstructions = `groundgate serves this conversation's tools: each is a tool the user's own words asked for (or a read its server lets anyone make), with its approved description.
Calls are checked against the conversation's evidence, the results seen so far, and the rules in force. A refused call is a tool error listing each failure with a code (F1–F12) and what to do next; never retry it unchanged.`

const sessionDiscoverInstructions = `
When the user asks for something no listed tool does, call discover with the user's request in your words: the tools those words name are added (the list changes), and your words are recorded as yours.`

// newServer is session id's SDK server, without tools yet.
func (h *Sessions) newServer(id hashing.Digest, agentDiscovery bool) *sessionServer {
	ss := &sessionServer{id: id, tools: map[string]hashing.Digest{}}
	instructions := sessionInstructions
	if agentDiscovery {
		instructions += sessionDiscoverInstructions
	}
	ss.srv = sdk.NewServer(&sdk.Implementation{Name: "groundgate/session", Title: "groundgate session", Version: h.opt.Version},
		&sdk.ServerOptions{Logger: h.log, Instructions: instructions, Capabilities: &sdk.ServerCapabilities{
			Logging: &sdk.LoggingCapabilities{}, Tools: &sdk.ToolCapabilities{ListChanged: true},
		},
			// The list is this session's, behind its token: no shared
			// cache may serve it to another (the protocol's default is
			// public).
			SetCacheable: func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) { c.CacheScope = "private" },
		})
	// A list is never older than the session's turns and the registry;
	// a call of a tool not listed is Γ's to refuse (F2, F3, …), recorded
	// in the session as REST's is, rather than the SDK's "unknown tool".
	ss.srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			switch method {
			case "tools/list":
				if _, err := h.sync(ctx, ss); err != nil {
					h.log.Warn("session tools not re-read", "session", id.String(), "err", err)
				}
			case "tools/call":
				if r, ok := req.(*sdk.CallToolRequest); ok && r.Params != nil && r.Params.Name != DiscoverTool && !ss.lists(r.Params.Name) {
					res, err := h.call(id)(ctx, r)
					if res != nil && res.Content == nil {
						res.Content = []sdk.Content{}
					}
					return res, err
				}
			}
			return next(ctx, method, req)
		}
	})
	return ss
}

// lists says whether ss lists a tool of this name.
func (ss *sessionServer) lists(name string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, ok := ss.tools[name]
	return ok || (name == DiscoverTool && ss.discover)
}

// sync makes ss list its session's tools now, and returns their names.
func (h *Sessions) sync(ctx context.Context, ss *sessionServer) ([]string, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	st, err := h.api.SessionTools(ctx, ss.id)
	if err != nil {
		return nil, err
	}
	return h.apply(ss, st), nil
}

// apply makes ss list st's tools, and returns their names. Called with
// ss.mu held.
func (h *Sessions) apply(ss *sessionServer, st server.SessionTools) []string {
	if st.Closed {
		st.Tools, st.AgentDiscovery = nil, false // a closed session takes no call and no turn
	}
	want := make(map[string]bool, len(st.Tools))
	names := make([]string, 0, len(st.Tools))
	for _, c := range st.Tools {
		if !validToolName(c.Name) {
			h.log.Warn("a session tool's name is not an MCP tool name: not listed", "tool", c.Name)
			continue
		}
		want[c.Name] = true
		names = append(names, c.Name)
		if ss.tools[c.Name] != c.Identity {
			ss.srv.AddTool(toolOf(c, c.Name), h.call(ss.id))
			ss.tools[c.Name] = c.Identity
		}
	}
	var gone []string
	for name := range ss.tools {
		if !want[name] {
			gone = append(gone, name)
			delete(ss.tools, name)
		}
	}
	if len(gone) > 0 {
		ss.srv.RemoveTools(gone...)
	}
	switch {
	case st.AgentDiscovery && !ss.discover:
		ss.srv.AddTool(discoverTool(), h.discover(ss))
		ss.discover = true
	case !st.AgentDiscovery && ss.discover:
		ss.srv.RemoveTools(DiscoverTool)
		ss.discover = false
	}
	return names
}

// validToolName is MCP's tool name: 1–128 of [A-Za-z0-9_.-].
func validToolName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// call is every grounded tool's handler: a call in the session, by the
// tool's name (U.T).
func (h *Sessions) call(id hashing.Digest) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args, err := callArguments(req)
		if err != nil {
			return nil, err
		}
		res, err := h.api.SessionCall(withRelay(ctx, req), id, req.Params.Name, args)
		if err != nil {
			return toolError(h.api.ProblemOf(ctx, err)), nil
		}
		return passThrough(res)
	}
}

// DiscoverTool is the name of an agent_discovery session's discover tool.
const DiscoverTool = "discover"

func discoverTool() *sdk.Tool {
	return &sdk.Tool{Name: DiscoverTool, Title: "Discover tools for the user's request",
		Description: "Adds a turn to this conversation: discovers the tools your words name and lists them (the tool list changes). " +
			"Say what the user asked for, in plain words. These are recorded as your words, not the user's.",
		InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["prompt"], "properties": {` +
			`"prompt": {"type": "string", "minLength": 1, "description": "what the user asked for, in your words"}}}`),
		Annotations: &sdk.ToolAnnotations{OpenWorldHint: new(false)},
	}
}

// discovered is the discover tool's structured content: the discovery,
// and the session's tools after it.
type discovered struct {
	Discovery discover.Result `json:"discovery"`
	Tools     []string        `json:"tools"`
}

func (h *Sessions) discover(ss *sessionServer) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var a struct {
			Prompt string `json:"prompt"`
		}
		args := []byte(req.Params.Arguments)
		if len(args) > DefaultMaxArguments {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("%s: the arguments are %d bytes; the limit is %d", req.Params.Name, len(args), DefaultMaxArguments)}
		}
		if err := server.DecodeObject(args, &a); err != nil {
			return problemAnswer(ctx, h.api, req.Params.Name, err)
		}
		res, err := h.api.SessionTurn(ctx, ss.id, a.Prompt)
		if err != nil {
			return problemAnswer(ctx, h.api, req.Params.Name, err)
		}
		names, err := h.sync(ctx, ss)
		if err != nil {
			return toolError(h.api.ProblemOf(ctx, err)), nil
		}
		b, err := rawJSON(discovered{Discovery: res, Tools: names})
		if err != nil {
			return nil, fmt.Errorf("mcp: encode the discovery: %w", err)
		}
		text := "The tools now listed: " + strings.Join(names, ", ") + ".\n" + string(b)
		return &sdk.CallToolResult{StructuredContent: b, Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
	}
}
