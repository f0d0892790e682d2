package server

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/ground"
)

// contractCheckRequest is the body of POST /v1/contracts/check: a request
// (FPR) and whether to read its data source.
type contractCheckRequest struct {
	Request json.RawMessage `json:"request"`
	Data    bool            `json:"data"`
}

// postContractCheck is the contracts' dry run: every clause's verdict per
// morphism, nothing run, nothing stored. The request need not be grounded.
func (s *Server) postContractCheck(c echo.Context) error {
	var body contractCheckRequest
	if err := s.decodeBody(c, &body); err != nil {
		return err
	}
	if string(body.Request) == "null" {
		body.Request = nil
	}
	req, fails := ground.DecodeRequest(body.Request)
	if len(fails) > 0 {
		return malformedRequest(fails)
	}
	rep, err := s.exec.CheckContracts(c.Request().Context(), req, body.Data)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rep)
}

// malformedRequest is the error for a request (FPR) that does not decode:
// a 400 malformed-request problem whose failures name every bad field
// (code F1).
func malformedRequest(fails []ground.Failure) error {
	e := newError(ptMalformed, "%s", refusalDetail(fails))
	e.extra = func(p *Problem) { p.Failures = fails }
	return e
}
