package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// readBody reads the body, at most limit bytes. The limit wraps the body
// only here, where it is read: net/http answers a refused request carrying
// Expect: 100-continue at once only while r.Body is still its own reader.
func readBody(c echo.Context, limit int64) ([]byte, error) {
	r := c.Request()
	b, err := io.ReadAll(http.MaxBytesReader(c.Response().Writer, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, newError(ptMalformed, "reading the body: %v", err)
	}
	if len(b) == 0 {
		return nil, newError(ptMalformed, "the body is empty; send a JSON document")
	}
	return b, nil
}

// decodeBody strictly decodes a JSON body: unknown fields, duplicate keys
// and trailing data are 400s naming the problem.
func (s *Server) decodeBody(c echo.Context, v any) error {
	b, err := readBody(c, s.cfg.BodyLimit)
	if err != nil {
		return err
	}
	return decodeStrictBody(b, v, "")
}

// decodeStrictBody decodes b into v, a pointer to a struct or map. The
// body must be a JSON object: null, arrays, strings, numbers and booleans
// are refused by name rather than decoded into a zero value (a null would
// leave a map nil). hint, if any, follows the error's text.
func decodeStrictBody(b []byte, v any, hint string) error {
	if kind := jsonKind(firstNonSpace(b)); kind != "" {
		return newError(ptMalformed, "the body is %s, not a JSON object%s", kind, hint)
	}
	if err := hashing.DecodeStrict(b, v); err != nil {
		return newError(ptMalformed, "%v%s", err, hint)
	}
	return nil
}

// firstNonSpace is the first byte of b that is not JSON whitespace.
func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// jsonKind names the JSON value other than an object that starts with c,
// for error messages; "" for an object or what is not JSON at all.
func jsonKind(c byte) string {
	switch {
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 'n':
		return "null"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return ""
}

func digestParam(c echo.Context, name string) (hashing.Digest, error) {
	return parseDigest(name, c.Param(name))
}

func parseDigest(name, s string) (hashing.Digest, error) {
	d, err := hashing.Parse(s)
	if err != nil {
		return hashing.Digest{}, newError(ptMalformed, "%s: %v", name, err)
	}
	return d, nil
}

// registryPage is a page of GET /v1/registry: the version's number and
// hash, and some of its entries.
type registryPage struct {
	registry.Export
	Next string `json:"next,omitempty"`
}

func (s *Server) getRegistry(c echo.Context) error {
	if err := pageQuery(c, "limit", "after", "version"); err != nil {
		return err
	}
	limit, err := pageLimit(c)
	if err != nil {
		return err
	}
	after, paged := pageAfter(c)
	snap := s.reg.Current()
	if v := c.QueryParam("version"); v != "" {
		// The following pages stay on the first page's version, so that
		// the pages together are that version's entries even while
		// another is written.
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			return newError(ptMalformed, "version %q: want a version number from a page's next", v)
		}
		if snap, err = s.reg.Version(c.Request().Context(), n); err != nil {
			return err
		}
	}
	exp := snap.Export()
	if !paged {
		return c.JSON(http.StatusOK, exp)
	}
	page, more := pageByName(exp.Capabilities, func(c registry.Capability) string { return c.Name }, after, limit)
	body := registryPage{Export: exp}
	body.Capabilities = page
	if more {
		body.Next = nextAfter("/v1/registry", "version="+strconv.FormatUint(exp.Version, 10)+"&", limit, page[len(page)-1].Name)
	}
	return c.JSON(http.StatusOK, body)
}

func (s *Server) getHistory(c echo.Context) error {
	if err := pageQuery(c, "limit", "before"); err != nil {
		return err
	}
	limit, err := pageLimit(c)
	if err != nil {
		return err
	}
	before, paged, err := pageBefore(c)
	if err != nil {
		return err
	}
	h, err := s.reg.History(c.Request().Context())
	if err != nil {
		return err
	}
	// Newest first: skip to the first version older than the cursor.
	i := 0
	for paged && i < len(h) && h[i].Version >= before {
		i++
	}
	page := h[i:min(i+limit, len(h))]
	body := map[string]any{"versions": page}
	if i+limit < len(h) {
		body["next"] = "/v1/registry/history?limit=" + strconv.Itoa(limit) + "&before=" + strconv.FormatUint(page[len(page)-1].Version, 10)
	}
	return c.JSON(http.StatusOK, body)
}

func (s *Server) getCapability(c echo.Context) error {
	cap, err := s.Capability(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cap)
}

func (s *Server) getVersion(c echo.Context) error {
	n, err := strconv.ParseUint(c.Param("n"), 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return newError(ptMalformed, "version %q is out of range", c.Param("n"))
	}
	if err != nil {
		return newError(ptMalformed, "version %q is not a non-negative integer", c.Param("n"))
	}
	// History starts at version 1; 0 is the empty registry before the
	// seed, never a state anyone can ground or execute against.
	if n == 0 {
		return fmt.Errorf("registry version 0: %w (history starts at 1)", registry.ErrNotFound)
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
	body, err := readBody(c, s.cfg.BodyLimit)
	if err != nil {
		return err
	}
	// The entry's own members, spelt exactly: a misspelt or other-case
	// member ("NAME") is malformed JSON for this route, a 400, before the
	// registry judges the entry.
	var shape struct {
		Name jsontext.Value `json:"name"`
		Kind jsontext.Value `json:"kind"`
		Sem  jsontext.Value `json:"sem"`
		Alg  jsontext.Value `json:"alg"`
		Impl jsontext.Value `json:"impl"`
		Disc jsontext.Value `json:"disc"`
	}
	if err := decodeStrictBody(body, &shape, " (an entry has name, kind, sem, alg, impl and disc)"); err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := hashing.DecodePart(body, &m); err != nil {
		return newError(ptMalformed, "%v", err)
	}
	// The path names the entry; a name in the body must agree with it.
	if raw, ok := m["name"]; ok {
		var got string
		if len(raw) == 0 || raw[0] != '"' || hashing.DecodePart(raw, &got) != nil {
			return newError(ptMalformed, "name: must be a string, got %.40s", raw)
		}
		if got != name {
			return newError(ptMalformed, "the body names %q but the path names %q", got, name)
		}
	} else {
		m["name"], _ = json.Marshal(name)
		if body, err = json.Marshal(m); err != nil {
			return fmt.Errorf("re-encode entry %q: %w", name, err)
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
	b, err := readBody(c, s.cfg.BodyLimit)
	if err != nil {
		return err
	}
	res, err := s.Discover(c.Request().Context(), b)
	if err != nil {
		return err
	}
	return writeJSON(c, &res, appendDiscovery)
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

func (s *Server) postGround(c echo.Context) error {
	b, err := readBody(c, s.cfg.BodyLimit)
	if err != nil {
		return err
	}
	g, err := s.Ground(c.Request().Context(), b)
	if err != nil {
		return err
	}
	return writeJSON(c, &g, appendGrounding)
}

// GroundingResponse is the status and body POST /v1/ground answers an
// outcome with: 200 and the grounding record with its id, or 422 and a
// problem listing every failure (with the record, when one was stored).
// The CLI prints the same bodies.
func GroundingResponse(out ground.Outcome) (int, any) {
	body := groundingOf(out)
	if out.Record.Decision.Admitted {
		return http.StatusOK, body
	}
	return refusal(out, body)
}

// groundingOf is the grounding record of an outcome, with its id if one
// was stored.
func groundingOf(out ground.Outcome) Grounding {
	body := Grounding{Record: out.Record}
	if !out.ID.IsZero() {
		body.ID = &out.ID
	}
	return body
}

// refusal is GroundingResponse's answer to a refused outcome.
func refusal(out ground.Outcome, body Grounding) (int, Problem) {
	k := problemTypes[ptNotGrounded]
	return k.status, Problem{
		Type: problemPrefix + ptNotGrounded, Title: k.title, Status: k.status,
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
	return c.JSON(http.StatusOK, Grounding{ID: &id, Record: rec})
}
