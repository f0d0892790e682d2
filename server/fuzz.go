package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/fuzz/runs"
)

// FuzzRuns is what the server needs from registry fuzzing (SPEC §12).
type FuzzRuns interface {
	Start(ctx context.Context, req runs.Request) (runs.Status, error)
	Get(ctx context.Context, id uint64) (runs.Status, error)
	List(ctx context.Context) ([]runs.Status, error)
	Cancel(ctx context.Context, id uint64) (runs.Status, error)
}

var _ FuzzRuns = (*runs.Manager)(nil)

// fuzzRunRequest is the body of POST /v1/fuzz/runs; an absent field takes
// its default. Seconds and seed are integers: a fraction or a string is
// malformed (400), a number out of range invalid (422). The runtime tests
// are off unless asked for: they execute every capability in a scratch
// copy of the database, far heavier than the discovery tests.
type fuzzRunRequest struct {
	Seconds *int64 `json:"seconds"`
	Seed    *int64 `json:"seed"`
	Runtime bool   `json:"runtime"`
}

func (s *Server) postFuzzRun(c echo.Context) error {
	if s.fuzz == nil {
		return errNoFuzz
	}
	var body fuzzRunRequest
	if err := s.decodeBody(c, &body); err != nil {
		return err
	}
	req := runs.Request{Seconds: runs.DefaultSeconds, Seed: runs.DefaultSeed, Runtime: body.Runtime}
	if body.Seconds != nil {
		req.Seconds = *body.Seconds
	}
	if body.Seed != nil {
		req.Seed = *body.Seed
	}
	st, err := s.fuzz.Start(c.Request().Context(), req)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, fuzzRunPath(st.ID))
	return writeFuzzRun(c, http.StatusAccepted, st)
}

func (s *Server) getFuzzRuns(c echo.Context) error {
	if s.fuzz == nil {
		return errNoFuzz
	}
	list, err := s.fuzz.List(c.Request().Context())
	if err != nil {
		return err
	}
	return writeFuzzRun(c, http.StatusOK, map[string]any{"runs": list})
}

func (s *Server) getFuzzRun(c echo.Context) error {
	if s.fuzz == nil {
		return errNoFuzz
	}
	id, err := fuzzRunID(c)
	if err != nil {
		return err
	}
	st, err := s.fuzz.Get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return writeFuzzRun(c, http.StatusOK, st)
}

// deleteFuzzRun cancels a running run: 200 with its final status (the
// partial report kept), or 202 if it has not stopped yet. A run that has
// ended is answered unchanged (200): cancelling is idempotent, and runs
// are never deleted on request — retention drops the oldest.
func (s *Server) deleteFuzzRun(c echo.Context) error {
	if s.fuzz == nil {
		return errNoFuzz
	}
	id, err := fuzzRunID(c)
	if err != nil {
		return err
	}
	st, err := s.fuzz.Cancel(c.Request().Context(), id)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if st.State == runs.StateRunning {
		status = http.StatusAccepted
	}
	return writeFuzzRun(c, status, st)
}

// errNoFuzz answers the fuzz routes of a server built without them.
var errNoFuzz = newError(ptNotFound, "this server does not run registry fuzzing")

func fuzzRunPath(id uint64) string { return "/v1/fuzz/runs/" + strconv.FormatUint(id, 10) }

func fuzzRunID(c echo.Context) (uint64, error) {
	raw := c.Param("id")
	id, err := strconv.ParseUint(raw, 10, 64)
	if err != nil || id == 0 {
		return 0, newError(ptMalformed, "run id must be a positive integer, got %q", clipName(raw))
	}
	return id, nil
}

// writeFuzzRun writes v without escaping <, > and &: a run's result is the
// report's canonical bytes, and is served as exactly those bytes (encoding/
// json would rewrite them inside a json.RawMessage).
func writeFuzzRun(c echo.Context, status int, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode fuzz run: %w", err)
	}
	return c.JSONBlob(status, b.Bytes())
}
