package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// executionRequest is the body of POST /v1/executions: only a grounding id
// this server issued. A bare request has no such field and is refused.
type executionRequest struct {
	Grounding string `json:"grounding"`
}

func (s *Server) postExecution(c echo.Context) error {
	b, err := readBody(c, s.cfg.BodyLimit)
	if err != nil {
		return err
	}
	var req executionRequest
	if err := decodeStrictBody(b, &req, "; an execution takes only {\"grounding\": \"sha256:…\"}, the id POST /v1/ground returned: a bare request never executes"); err != nil {
		return err
	}
	if req.Grounding == "" {
		return newError(ptMalformed, "grounding is missing: ground the request first (POST /v1/ground) and pass the id it returned")
	}
	id, err := parseDigest("grounding", req.Grounding)
	if err != nil {
		return err
	}
	g, err := s.gate.Load(c.Request().Context(), id)
	if err != nil {
		return err
	}
	fp, err := s.exec.Execute(c.Request().Context(), g)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/v1/executions/"+fp.Hash.String())
	return c.JSON(http.StatusCreated, fp)
}

func (s *Server) getExecution(c echo.Context) error {
	h, err := digestParam(c, "hash")
	if err != nil {
		return err
	}
	fp, err := s.exec.Get(c.Request().Context(), h)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, fp)
}

func (s *Server) postReplay(c echo.Context) error {
	h, err := digestParam(c, "hash")
	if err != nil {
		return err
	}
	rep, err := s.exec.Replay(c.Request().Context(), h)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rep)
}

func (s *Server) getDiff(c echo.Context) error {
	a, err := digestParam(c, "a")
	if err != nil {
		return err
	}
	b, err := digestParam(c, "b")
	if err != nil {
		return err
	}
	rep, err := s.exec.Diff(c.Request().Context(), a, b)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rep)
}
