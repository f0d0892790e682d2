package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Upstreams is what the server needs from the gateway (SPEC §14).
type Upstreams interface {
	Put(ctx context.Context, name string, cfg gateway.Config) (created bool, err error)
	View(name string) (gateway.View, error)
	Views() []gateway.View
	Sync(ctx context.Context, name string, req gateway.SyncRequest, screen gateway.Screen) (gateway.Plan, error)
}

// Calls is what the server needs to call upstream tools.
type Calls interface {
	Call(ctx context.Context, req calls.Request) (calls.Response, error)
	Get(ctx context.Context, hash hashing.Digest) (*calls.Footprint, error)
	Replay(ctx context.Context, hash hashing.Digest) (*calls.ReplayReport, error)
	Diff(ctx context.Context, a, b hashing.Digest) (*calls.DiffReport, error)
	Attest(ctx context.Context, hash hashing.Digest) ([]byte, error)
}

var (
	_ Upstreams = (*gateway.Manager)(nil)
	_ Calls     = (*calls.Service)(nil)
)

var errNoGateway = newError(ptNotFound, "this server has no gateway")

func (s *Server) routeGateway(e *echo.Echo, get func(string, echo.HandlerFunc)) {
	admin := s.requireAdminFor
	get("/v1/upstreams", s.getUpstreams)
	get("/v1/upstreams/:name", s.getUpstream)
	e.PUT("/v1/upstreams/:name", s.putUpstream, admin)
	e.POST("/v1/upstreams/:name/sync", s.postSync, admin)
	e.POST("/v1/calls", s.postCall, admin)
	e.Match([]string{http.MethodGet, http.MethodHead}, "/v1/calls/:hash", s.getCall, admin)
	e.POST("/v1/calls/:hash/replay", s.postCallReplay, admin)
	e.Match([]string{http.MethodGet, http.MethodHead}, "/v1/calls/:hash/attestation", s.getCallAttestation, admin)
	e.Match([]string{http.MethodGet, http.MethodHead}, "/v1/calls/:a/diff/:b", s.getCallDiff, admin)
}

// requireAdminFor guards the gateway's routes: upstream tools act on the
// world, and call footprints hold arguments and results (SPEC §14).
func (s *Server) requireAdminFor(next echo.HandlerFunc) echo.HandlerFunc {
	return s.requireToken("the gateway is closed", "the gateway needs", next)
}

type upstreamsBody struct {
	Upstreams []gateway.View `json:"upstreams"`
	Next      string         `json:"next,omitempty"`
}

func (s *Server) getUpstreams(c echo.Context) error {
	if err := pageQuery(c, "limit", "after"); err != nil {
		return err
	}
	limit, err := pageLimit(c)
	if err != nil {
		return err
	}
	views := []gateway.View{}
	if s.ups != nil {
		views = s.ups.Views() // in name order
	}
	after, paged := pageAfter(c)
	if !paged {
		return c.JSON(http.StatusOK, upstreamsBody{Upstreams: views})
	}
	page, more := pageByName(views, func(v gateway.View) string { return v.Name }, after, limit)
	body := upstreamsBody{Upstreams: page}
	if more {
		body.Next = nextAfter("/v1/upstreams", "", limit, page[len(page)-1].Name)
	}
	return c.JSON(http.StatusOK, body)
}

func (s *Server) getUpstream(c echo.Context) error {
	if s.ups == nil {
		return errNoGateway
	}
	v, err := s.ups.View(c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) putUpstream(c echo.Context) error {
	if s.ups == nil {
		return errNoGateway
	}
	b, err := readBody(c, s.cfg.BodyLimit)
	if err != nil {
		return err
	}
	name := c.Param("name")
	cfg, err := gateway.DecodeConfig(name, b)
	if err != nil {
		return err
	}
	created, err := s.ups.Put(c.Request().Context(), name, cfg)
	if err != nil {
		return err
	}
	v, err := s.ups.View(name)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, v)
}

func (s *Server) postSync(c echo.Context) error {
	if s.ups == nil {
		return errNoGateway
	}
	b, err := readBody(c, s.cfg.BodyLimit)
	if err != nil {
		return err
	}
	var req gateway.SyncRequest
	if err := decodeStrictBody(b, &req, ""); err != nil {
		return err
	}
	plan, err := s.ups.Sync(c.Request().Context(), c.Param("name"), req, s.screen)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, plan)
}

// callRequest is the body of POST /v1/calls.
type callRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Discovery json.RawMessage `json:"discovery"`
}

// callBody is the 200 body of POST /v1/calls.
type callBody struct {
	Call   *calls.Footprint `json:"call"`
	Result json.RawMessage  `json:"result"`
}

// Call answers POST /v1/calls' body (and the MCP call tool).
func (s *Server) Call(ctx context.Context, body []byte) (calls.Response, error) {
	if s.calls == nil {
		return calls.Response{}, errNoGateway
	}
	var cr callRequest
	if err := decodeStrictBody(body, &cr, ""); err != nil {
		return calls.Response{}, err
	}
	req := calls.Request{Tool: cr.Tool, Arguments: cr.Arguments}
	if string(req.Arguments) == "null" {
		req.Arguments = nil
	}
	var err error
	if req.DiscoveryID, req.Inline, err = evidenceOf(cr.Discovery); err != nil {
		return calls.Response{}, err
	}
	return s.calls.Call(ctx, req)
}

func (s *Server) postCall(c echo.Context) error {
	b, err := readBody(c, s.cfg.BodyLimit)
	if err != nil {
		return err
	}
	res, err := s.Call(c.Request().Context(), b)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, callBody{Call: res.Call, Result: res.Result})
}

func (s *Server) getCall(c echo.Context) error {
	if s.calls == nil {
		return errNoGateway
	}
	h, err := digestParam(c, "hash")
	if err != nil {
		return err
	}
	f, err := s.calls.Get(c.Request().Context(), h)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, f)
}

func (s *Server) postCallReplay(c echo.Context) error {
	if s.calls == nil {
		return errNoGateway
	}
	h, err := digestParam(c, "hash")
	if err != nil {
		return err
	}
	rep, err := s.calls.Replay(c.Request().Context(), h)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rep)
}

func (s *Server) getCallAttestation(c echo.Context) error {
	if s.calls == nil {
		return errNoGateway
	}
	h, err := digestParam(c, "hash")
	if err != nil {
		return err
	}
	env, err := s.calls.Attest(c.Request().Context(), h)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, env)
}

func (s *Server) getCallDiff(c echo.Context) error {
	if s.calls == nil {
		return errNoGateway
	}
	a, err := digestParam(c, "a")
	if err != nil {
		return err
	}
	b, err := digestParam(c, "b")
	if err != nil {
		return err
	}
	rep, err := s.calls.Diff(c.Request().Context(), a, b)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rep)
}

// UpstreamTools lists the tool entries in force of a configured upstream
// (the per-upstream MCP endpoint's tools).
func (s *Server) UpstreamTools(name string) ([]registry.Capability, error) {
	if s.ups == nil {
		return nil, errNoGateway
	}
	if _, err := s.ups.View(name); err != nil {
		return nil, err
	}
	return gateway.InForce(s.reg.Current(), name), nil
}

// CallUpstream is a call decided and forwarded as POST /v1/calls does.
func (s *Server) CallUpstream(ctx context.Context, req calls.Request) (calls.Response, error) {
	if s.calls == nil {
		return calls.Response{}, errNoGateway
	}
	return s.calls.Call(ctx, req)
}

// MountUpstreamMCP serves h at /mcp/upstreams/{name}, with the admin
// token: calls act on the world.
func (s *Server) MountUpstreamMCP(h http.Handler) {
	s.echo.Match([]string{http.MethodGet, http.MethodPost, http.MethodDelete}, MCPPath+"/upstreams/:name", echo.WrapHandler(h), s.requireAdminFor)
}
