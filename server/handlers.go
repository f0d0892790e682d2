package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// readBody reads the (already size-limited) body.
func readBody(c echo.Context) ([]byte, error) {
	b, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, newError(http.StatusBadRequest, ptMalformed, "reading the body: %v", err)
	}
	if len(b) == 0 {
		return nil, newError(http.StatusBadRequest, ptMalformed, "the body is empty; send a JSON document")
	}
	return b, nil
}

// decodeBody strictly decodes a JSON body: unknown fields, duplicate keys
// and trailing data are 400s naming the problem.
func decodeBody(c echo.Context, v any) error {
	b, err := readBody(c)
	if err != nil {
		return err
	}
	if err := decodeStrictBody(b, v); err != nil {
		return newError(http.StatusBadRequest, ptMalformed, "%v", err)
	}
	return nil
}

func decodeStrictBody(b []byte, v any) error { return hashing.DecodeStrict(b, v) }

func digestParam(c echo.Context, name string) (hashing.Digest, error) {
	return parseDigest(name, c.Param(name))
}

func parseDigest(name, s string) (hashing.Digest, error) {
	d, err := hashing.Parse(s)
	if err != nil {
		return hashing.Digest{}, newError(http.StatusBadRequest, ptMalformed, "%s: %v", name, err)
	}
	return d, nil
}

func (s *Server) getRegistry(c echo.Context) error {
	return c.JSON(http.StatusOK, s.reg.Current().Export())
}

func (s *Server) getHistory(c echo.Context) error {
	h, err := s.reg.History(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"versions": h})
}

func (s *Server) getCapability(c echo.Context) error {
	name := c.Param("name")
	cap, ok := s.reg.Current().Get(name)
	if !ok {
		return fmt.Errorf("capability %q: %w", name, registry.ErrNotFound)
	}
	return c.JSON(http.StatusOK, cap)
}

func (s *Server) getVersion(c echo.Context) error {
	n, err := strconv.ParseUint(c.Param("n"), 10, 64)
	if err != nil {
		return newError(http.StatusBadRequest, ptMalformed, "version %q is not a non-negative integer", c.Param("n"))
	}
	snap, err := s.reg.Version(c.Request().Context(), n)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, snap.Export())
}

// putResponse is the body of a successful PUT.
type putResponse struct {
	Capability registry.Capability `json:"capability"`
	Version    uint64              `json:"version"`
	Registry   hashing.Digest      `json:"registry"`
	Changed    bool                `json:"changed"`
}

func (s *Server) putCapability(c echo.Context) error {
	name := c.Param("name")
	body, err := readBody(c)
	if err != nil {
		return err
	}
	// The path names the entry; a name in the body must agree with it.
	var probe struct {
		Name *string `json:"name"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return newError(http.StatusBadRequest, ptMalformed, "the body is not a JSON object: %v", err)
	}
	if probe.Name != nil && *probe.Name != name {
		return newError(http.StatusBadRequest, ptMalformed, "the body names %q but the path names %q", *probe.Name, name)
	}
	if probe.Name == nil {
		var m map[string]json.RawMessage
		if err := hashing.DecodeStrict(body, &m); err != nil {
			return newError(http.StatusBadRequest, ptMalformed, "%v", err)
		}
		m["name"], _ = json.Marshal(name)
		if body, err = json.Marshal(m); err != nil {
			return err
		}
	}
	e, err := registry.DecodeEntry(body, strconv.Quote(name))
	if err != nil {
		return err
	}
	_, existed := s.reg.Current().Get(name)
	res, err := s.reg.Put(c.Request().Context(), e)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if !existed {
		status = http.StatusCreated
	}
	return c.JSON(status, putResponse{Capability: res.Capability, Version: res.Version, Registry: s.reg.Current().Registry(), Changed: res.Changed})
}

func (s *Server) postDiscover(c echo.Context) error {
	var q discover.Query
	if err := decodeBody(c, &q); err != nil {
		return err
	}
	res, err := s.disc.Discover(c.Request().Context(), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

func (s *Server) getDiscovery(c echo.Context) error {
	id, err := digestParam(c, "id")
	if err != nil {
		return err
	}
	res, err := s.disc.Lookup(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// groundRequest is the body of POST /v1/ground. Discovery is either the id
// of a discovery this server made or the full evidence inline.
type groundRequest struct {
	Request   json.RawMessage `json:"request"`
	Discovery json.RawMessage `json:"discovery"`
}

// groundingBody is a grounding record with its id: the 200 body of POST
// /v1/ground and the body of GET /v1/groundings/{id}.
type groundingBody struct {
	// ID is absent when the proposal was too malformed to be recorded.
	ID *hashing.Digest `json:"id,omitempty"`
	ground.Record
}

func (s *Server) postGround(c echo.Context) error {
	var gr groundRequest
	if err := decodeBody(c, &gr); err != nil {
		return err
	}
	p := ground.Proposal{Request: gr.Request}
	switch {
	case len(gr.Discovery) == 0 || string(gr.Discovery) == "null":
		// the gate reports the missing evidence as a failure
	case gr.Discovery[0] == '"':
		var ids string
		_ = json.Unmarshal(gr.Discovery, &ids)
		id, err := hashing.Parse(ids)
		if err != nil {
			return newError(http.StatusBadRequest, ptMalformed, "discovery: %v (give a discovery id or the full evidence)", err)
		}
		p.DiscoveryID = id
	default:
		p.Inline = gr.Discovery
	}
	if string(p.Request) == "null" {
		p.Request = nil
	}
	out, err := s.gate.Ground(c.Request().Context(), p)
	if err != nil {
		return err
	}
	s.gates.WithLabelValues(strconv.FormatBool(out.Record.Decision.Admitted)).Inc()
	status, body := GroundingResponse(out)
	if status != http.StatusOK {
		return problemError{body.(Problem)}
	}
	return c.JSON(status, body)
}

// GroundingResponse is the status and body POST /v1/ground answers an
// outcome with: 200 and the grounding record with its id, or 422 and a
// problem listing every failure (with the record, when one was stored).
// The CLI prints the same bodies.
func GroundingResponse(out ground.Outcome) (int, any) {
	body := groundingBody{Record: out.Record}
	if !out.ID.IsZero() {
		body.ID = &out.ID
	}
	if out.Record.Decision.Admitted {
		return http.StatusOK, body
	}
	st := http.StatusUnprocessableEntity
	return st, Problem{
		Type: problemPrefix + ptNotGrounded, Title: titles[ptNotGrounded], Status: st,
		Detail:    refusalDetail(out.Record.Decision.Failures),
		Failures:  out.Record.Decision.Failures,
		Grounding: &body,
	}
}

func refusalDetail(fs []ground.Failure) string {
	if len(fs) == 1 {
		return fmt.Sprintf("%s: %s (%s)", fs[0].Field, fs[0].Detail, fs[0].Code)
	}
	return fmt.Sprintf("%d fields failed; see failures. First: %s: %s (%s)", len(fs), fs[0].Field, fs[0].Detail, fs[0].Code)
}

func (s *Server) getGrounding(c echo.Context) error {
	id, err := digestParam(c, "id")
	if err != nil {
		return err
	}
	rec, err := s.gate.Record(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, groundingBody{ID: &id, Record: rec})
}
