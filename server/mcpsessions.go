package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/session"
)

// Agents over MCP with a session token (SPEC §15): /mcp with
// "Authorization: Bearer ggs_…" serves that session (package mcp's
// Sessions), the admin token keeps the server's own tools. The token alone
// names its session; the server resolves it, and hands the MCP handler the
// session's id in the request's context (MCPSession). The operations the
// session's MCP server calls are here: its tools, an agent's turn, a call.

// tokenSessions resolves a session token to its session
// (session.Service.SessionOf).
type tokenSessions interface {
	SessionOf(ctx context.Context, token string) (hashing.Digest, error)
}

var _ tokenSessions = (*session.Service)(nil)

type mcpSessionKey struct{}

// MCPSession returns the session a request to /mcp was authorized for by
// its session token; false for the admin token.
func MCPSession(ctx context.Context) (hashing.Digest, bool) {
	id, ok := ctx.Value(mcpSessionKey{}).(hashing.Digest)
	return id, ok && !id.IsZero()
}

// MountSessionMCP serves h at /mcp for requests with a session token
// (MountMCP's route): h finds the session with MCPSession.
func (s *Server) MountSessionMCP(h http.Handler) { s.mcpSessions = h }

// mcpAuth is /mcp's authorization: a session token reaches its own
// session's MCP server (MountSessionMCP), any other token must be the
// admin's.
func (s *Server) mcpAuth(next echo.HandlerFunc) echo.HandlerFunc {
	admin := s.requireToken("/mcp is refused (stdio needs none: groundgate mcp)", "/mcp needs", next)
	return func(c echo.Context) error {
		token, ok := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
		if !ok || !strings.HasPrefix(token, session.TokenPrefix) {
			return admin(c)
		}
		ts, _ := s.sessions.(tokenSessions)
		if s.mcpSessions == nil || ts == nil {
			return newError(ptUnauthorized, "this server serves no session over MCP: /mcp needs Authorization: Bearer <admin token>")
		}
		id, err := ts.SessionOf(c.Request().Context(), token)
		if errors.Is(err, session.ErrUnauthorized) {
			return newError(ptUnauthorized, "/mcp needs Authorization: Bearer <a session's token> (or the admin token)")
		}
		if err != nil {
			return err
		}
		r := c.Request()
		s.mcpSessions.ServeHTTP(c.Response(), r.WithContext(context.WithValue(r.Context(), mcpSessionKey{}, id)))
		return nil
	}
}

// SessionTools is what a session's MCP server lists.
type SessionTools struct {
	// AgentDiscovery is the session's agent_discovery: whether the agent
	// may add turns of its own words (the discover tool).
	AgentDiscovery bool
	Closed         bool
	// Tools are the session's grounded tools, by name: every upstream
	// tool a turn's evidence matched (the entry in force still the
	// identity the evidence matched), and the exempt reads (the read
	// tools of upstreams that ground writes only). Entries in force.
	Tools []registry.Capability
}

// upstreamGround is what SessionTools needs of the gateway beyond
// Upstreams (gateway.Manager has it); without it, Views serves.
type upstreamGround interface {
	Names() []string
	Ground(name string) (gateway.Ground, error)
}

// SessionTools lists session id's grounded tools. Γ decides every call
// (session.Service.Call): this list is what an agent is shown, and a call
// of a tool it lacks is refused there as everywhere.
func (s *Server) SessionTools(ctx context.Context, id hashing.Digest) (SessionTools, error) {
	if s.sessions == nil || s.ups == nil {
		return SessionTools{}, errNoSessions
	}
	sess, err := s.sessions.Get(ctx, id)
	if err != nil {
		return SessionTools{}, err
	}
	out := SessionTools{AgentDiscovery: sess.AgentDiscovery, Closed: sess.Closed}
	grounds := map[string]gateway.Ground{}
	if ug, ok := s.ups.(upstreamGround); ok {
		for _, n := range ug.Names() {
			if g, err := ug.Ground(n); err == nil {
				grounds[n] = g
			}
		}
	} else {
		for _, v := range s.ups.Views() {
			grounds[v.Name] = v.Config.Ground
		}
	}
	// The match Γ reads for each tool: the most confident over the
	// turns, the earliest on a tie (calls' sessionEvidence).
	type best struct {
		identity   hashing.Digest
		confidence float64
	}
	matched := map[string]best{}
	for _, ev := range sess.Evidence() {
		res, err := s.disc.Lookup(ctx, ev)
		if err != nil {
			if ctx.Err() != nil {
				return SessionTools{}, ctx.Err()
			}
			continue // Γ refuses such evidence (F8); it grounds nothing here
		}
		for _, m := range res.Matches {
			if m.Kind != registry.KindTool {
				continue
			}
			if b, ok := matched[m.Name]; !ok || m.Confidence > b.confidence {
				matched[m.Name] = best{m.Capability, m.Confidence}
			}
		}
	}
	snap := s.reg.Current()
	listed := map[string]bool{}
	add := func(c registry.Capability) {
		if !listed[c.Name] {
			listed[c.Name] = true
			out.Tools = append(out.Tools, c)
		}
	}
	for name, m := range matched {
		c, ok := snap.Get(name)
		if !ok || c.Kind != registry.KindTool || c.Tool == nil || c.Disc.Deprecated || c.Identity != m.identity {
			continue
		}
		if _, ok := grounds[c.Tool.Impl.Upstream]; ok {
			add(c)
		}
	}
	for name, g := range grounds {
		if g != gateway.GroundWrites {
			continue
		}
		for _, c := range gateway.InForce(snap, name) {
			if c.Tool.Sem.Effect == registry.EffectRead {
				add(c)
			}
		}
	}
	slices.SortFunc(out.Tools, func(a, b registry.Capability) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// SessionTurn adds a turn of the agent's own words to session id
// (session.ByAgent: only an agent_discovery session takes one) and
// returns their discovery.
func (s *Server) SessionTurn(ctx context.Context, id hashing.Digest, prompt string) (discover.Result, error) {
	if s.sessions == nil {
		return discover.Result{}, errNoSessions
	}
	_, res, err := s.sessions.Turn(ctx, id, session.Words{Prompt: prompt, By: session.ByAgent})
	return res, err
}

// SessionCall is a call in session id, as POST /v1/sessions/{id}/calls
// makes it (session.Service.Call): Γ's refusal or the upstream's failure
// is an error whose problem is REST's, with the session's record of the
// call.
func (s *Server) SessionCall(ctx context.Context, id hashing.Digest, tool string, args json.RawMessage) (calls.Response, error) {
	if s.sessions == nil {
		return calls.Response{}, errNoSessions
	}
	out, err := s.sessions.Call(ctx, id, tool, args)
	if err != nil {
		return calls.Response{}, err
	}
	if out.Err != nil {
		return calls.Response{}, &sessionCallError{err: out.Err, record: out.Record}
	}
	return out.Response, nil
}
