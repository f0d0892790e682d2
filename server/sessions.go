package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/session"
)

// Sessions is what the server needs to run sessions (SPEC §15).
type Sessions interface {
	Open(ctx context.Context, w session.Words, agentDiscovery bool) (session.Created, discover.Result, error)
	Turn(ctx context.Context, id hashing.Digest, w session.Words) (*session.Session, discover.Result, error)
	Call(ctx context.Context, id hashing.Digest, tool string, args json.RawMessage) (session.Called, error)
	Get(ctx context.Context, id hashing.Digest) (*session.Session, error)
	Close(ctx context.Context, id hashing.Digest) (*session.Session, error)
	Authorize(ctx context.Context, id hashing.Digest, token string) error
	State(ctx context.Context, id hashing.Digest) (*session.State, error)
}

var _ Sessions = (*session.Service)(nil)

var errNoSessions = newError(ptNotFound, "this server has no gateway, so no sessions")

func (s *Server) routeSessions(e *echo.Echo, get func(string, echo.HandlerFunc)) {
	admin := s.requireAdminFor
	e.POST("/v1/sessions", s.postSession, admin)
	e.POST("/v1/sessions/:id/turns", s.postTurn, admin)
	e.POST("/v1/sessions/:id/calls", s.postSessionCall, s.requireSession)
	get("/v1/sessions/:id", s.requireSession(s.getSession))
	get("/v1/sessions/:id/state", s.requireSession(s.getSessionState))
	e.DELETE("/v1/sessions/:id", s.deleteSession, admin)
}

// requireSession admits the session's own token, or the admin token. A
// token of another session, a wrong token and an unknown id are one
// answer (401), so a token holder learns nothing of other sessions.
func (s *Server) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.sessions == nil {
			return errNoSessions
		}
		token, ok := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
		if ok && strings.HasPrefix(token, session.TokenPrefix) {
			id, err := hashing.Parse(c.Param("id"))
			if err != nil || s.sessions.Authorize(c.Request().Context(), id, token) != nil {
				return newError(ptUnauthorized, "this session needs Authorization: Bearer <its token> (or the admin token)")
			}
			return next(c)
		}
		return s.requireToken("sessions are closed", "this session needs its token or", next)(c)
	}
}

// sessionRequest is the body of POST /v1/sessions and of a turn.
type sessionRequest struct {
	Prompt         string          `json:"prompt"`
	AgentDiscovery bool            `json:"agent_discovery"`
	Facts          json.RawMessage `json:"facts"`
}

// sessionCreated is the 201 body of POST /v1/sessions: the token is given
// here only.
type sessionCreated struct {
	ID        hashing.Digest   `json:"id"`
	Token     string           `json:"token"`
	Discovery *discover.Result `json:"discovery"`
	Session   *session.Session `json:"session"`
}

// turnBody is the 200 body of POST /v1/sessions/{id}/turns.
type turnBody struct {
	Discovery *discover.Result `json:"discovery"`
	Session   *session.Session `json:"session"`
}

func (s *Server) postSession(c echo.Context) error {
	if s.sessions == nil {
		return errNoSessions
	}
	var req sessionRequest
	if err := s.decodeBody(c, &req); err != nil {
		return err
	}
	created, res, err := s.sessions.Open(c.Request().Context(), session.Words{Prompt: req.Prompt, Facts: req.Facts}, req.AgentDiscovery)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/v1/sessions/"+created.Session.ID.String())
	return c.JSON(http.StatusCreated, sessionCreated{ID: created.Session.ID, Token: created.Token, Discovery: &res, Session: created.Session})
}

func (s *Server) postTurn(c echo.Context) error {
	if s.sessions == nil {
		return errNoSessions
	}
	id, err := digestParam(c, "id")
	if err != nil {
		return err
	}
	var req sessionRequest
	if err := s.decodeBody(c, &req); err != nil {
		return err
	}
	if req.AgentDiscovery {
		return newError(ptMalformed, "agent_discovery is chosen when a session opens, not per turn")
	}
	sess, res, err := s.sessions.Turn(c.Request().Context(), id, session.Words{Prompt: req.Prompt, Facts: req.Facts})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, turnBody{Discovery: &res, Session: sess})
}

// sessionCallRequest is the body of POST /v1/sessions/{id}/calls: the
// session's evidence grounds the call, so it names none.
type sessionCallRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// sessionCallBody is its 200 body: the footprint, the result, and the
// call as the session recorded it (its place, the state it left, where
// its result was filed).
type sessionCallBody struct {
	Call    *calls.Footprint    `json:"call"`
	Result  json.RawMessage     `json:"result"`
	Session *session.CallRecord `json:"session"`
}

// sessionCallError is Γ's answer to a call in a session that is not a
// 200, with the call as the session recorded it.
type sessionCallError struct {
	err    error
	record session.CallRecord
}

func (e *sessionCallError) Error() string { return e.err.Error() }
func (e *sessionCallError) Unwrap() error { return e.err }

func (s *Server) postSessionCall(c echo.Context) error {
	id, err := digestParam(c, "id")
	if err != nil {
		return err
	}
	var req sessionCallRequest
	if err := s.decodeBody(c, &req); err != nil {
		return err
	}
	args := req.Arguments
	if string(args) == "null" {
		args = nil
	}
	out, err := s.sessions.Call(c.Request().Context(), id, req.Tool, args)
	if err != nil {
		return err
	}
	if out.Err != nil {
		return &sessionCallError{err: out.Err, record: out.Record}
	}
	rec := out.Record
	return c.JSON(http.StatusOK, sessionCallBody{Call: out.Response.Call, Result: out.Response.Result, Session: &rec})
}

func (s *Server) getSession(c echo.Context) error {
	id, err := digestParam(c, "id")
	if err != nil {
		return err
	}
	sess, err := s.sessions.Get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, sess)
}

// getSessionState answers the session's trusted state now, in RFC 8785
// form: the bytes whose SHA-256 GET /v1/sessions/{id} gives as state.
func (s *Server) getSessionState(c echo.Context) error {
	id, err := digestParam(c, "id")
	if err != nil {
		return err
	}
	st, err := s.sessions.State(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, st.Canonical())
}

func (s *Server) deleteSession(c echo.Context) error {
	if s.sessions == nil {
		return errNoSessions
	}
	id, err := digestParam(c, "id")
	if err != nil {
		return err
	}
	sess, err := s.sessions.Close(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, sess)
}
