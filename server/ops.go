package server

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// The API's operations apart from HTTP. Each takes what a REST call
// carries (a JSON body, path values) and returns what REST answers 2xx
// with, or an error ProblemOf maps. The REST handlers and the MCP tools
// (package mcp) both call them: a request means the same over either, and
// there is one code path to the gate.

// DecodeObject decodes a JSON object into v as every request body is
// decoded (unknown fields, duplicate keys, trailing data and non-objects
// refused): its errors are 400 problems.
func DecodeObject(b []byte, v any) error { return decodeStrictBody(b, v, "") }

// Discover answers POST /v1/discover's body.
func (s *Server) Discover(ctx context.Context, body []byte) (discover.Result, error) {
	var q discover.Query
	if err := decodeStrictBody(body, &q, ""); err != nil {
		return discover.Result{}, err
	}
	return s.disc.Discover(ctx, q)
}

// groundRequest is the body of POST /v1/ground. Discovery is either the id
// of a discovery this server made or the full evidence inline.
type groundRequest struct {
	Request   json.RawMessage `json:"request"`
	Discovery json.RawMessage `json:"discovery"`
	// Repair is "rules" (the default), "none" or "llm": what may repair a
	// refused pipeline step (SPEC §11; "llm" only with serve --repair-llm).
	Repair string `json:"repair"`
}

// Grounding is a grounding record with its id: the 200 body of POST
// /v1/ground and the body of GET /v1/groundings/{id}.
type Grounding struct {
	// ID is absent when the proposal was too malformed to be recorded.
	ID *hashing.Digest `json:"id,omitempty"`
	ground.Record
}

// Ground answers POST /v1/ground's body: the admitted grounding, or an
// error carrying the refusal's problem (every failure, and the record when
// one was stored).
func (s *Server) Ground(ctx context.Context, body []byte) (Grounding, error) {
	var gr groundRequest
	if err := decodeStrictBody(body, &gr, ""); err != nil {
		return Grounding{}, err
	}
	mode, err := ground.ParseRepairMode(gr.Repair)
	if err != nil {
		return Grounding{}, newError(ptMalformed, "%v", err)
	}
	p := ground.Proposal{Request: gr.Request, Repair: mode}
	// Missing evidence is the gate's to report, as a failure.
	if p.DiscoveryID, p.Inline, err = evidenceOf(gr.Discovery); err != nil {
		return Grounding{}, err
	}
	if string(p.Request) == "null" {
		p.Request = nil
	}
	out, err := s.gate.Ground(ctx, p)
	if err != nil {
		return Grounding{}, err
	}
	s.gates.WithLabelValues(strconv.FormatBool(out.Record.Decision.Admitted)).Inc()
	g := groundingOf(out)
	if !out.Record.Decision.Admitted {
		_, p := refusal(out, g)
		return Grounding{}, problemError{p}
	}
	return g, nil
}

// executionRequest is the body of POST /v1/executions: only a grounding id
// this server issued. A bare request has no such field and is refused.
type executionRequest struct {
	Grounding string `json:"grounding"`
}

// Execute answers POST /v1/executions' body: it runs what the grounding
// admitted, exactly.
func (s *Server) Execute(ctx context.Context, body []byte) (*execution.Footprint, error) {
	var req executionRequest
	if err := decodeStrictBody(body, &req, "; an execution takes only {\"grounding\": \"sha256:…\"}, the id a grounding returned: a bare request never executes"); err != nil {
		return nil, err
	}
	if req.Grounding == "" {
		return nil, newError(ptMalformed, "grounding is missing: ground the request first and pass the id it returned")
	}
	id, err := parseDigest("grounding", req.Grounding)
	if err != nil {
		return nil, err
	}
	g, err := s.gate.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.exec.Execute(ctx, g)
}

// Footprint answers GET /v1/executions/{hash}.
func (s *Server) Footprint(ctx context.Context, hash string) (*execution.Footprint, error) {
	h, err := parseDigest("hash", hash)
	if err != nil {
		return nil, err
	}
	return s.exec.Get(ctx, h)
}

// Replay answers POST /v1/executions/{hash}/replay.
func (s *Server) Replay(ctx context.Context, hash string) (*execution.ReplayReport, error) {
	h, err := parseDigest("hash", hash)
	if err != nil {
		return nil, err
	}
	return s.exec.Replay(ctx, h)
}

// Diff answers GET /v1/diff/{a}/{b}.
func (s *Server) Diff(ctx context.Context, a, b string) (*execution.DiffReport, error) {
	da, err := parseDigest("a", a)
	if err != nil {
		return nil, err
	}
	db, err := parseDigest("b", b)
	if err != nil {
		return nil, err
	}
	return s.exec.Diff(ctx, da, db)
}

// Capability answers GET /v1/registry/capabilities/{name}: the entry in
// the current registry version. An entry that fails its own check is a
// corrupt record (500), not a missing one.
func (s *Server) Capability(_ context.Context, name string) (registry.Capability, error) {
	return s.reg.Current().Lookup(name)
}

// ProblemOf is the problem REST answers err with (SPEC §7's vocabulary),
// for callers outside HTTP. A cause the server does not recognise is
// logged here and leaves as a generic internal problem.
func (s *Server) ProblemOf(ctx context.Context, err error) Problem {
	_, p, logCause := problemFor(ctx, err)
	if logCause {
		s.log.ErrorContext(ctx, "request failed", "problem", p.Type, "err", err)
	}
	return p
}

// evidenceOf reads a body's "discovery" member: a discovery id (a JSON
// string) or the full evidence (an object, returned as it is for the gate
// to re-derive); neither when absent or null.
func evidenceOf(raw json.RawMessage) (id hashing.Digest, inline []byte, err error) {
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return hashing.Digest{}, nil, nil
	case raw[0] == '"':
		var s string
		_ = hashing.DecodePart(raw, &s)
		if id, err = hashing.Parse(s); err != nil {
			return hashing.Digest{}, nil, newError(ptMalformed, "discovery: %v (give a discovery id or the full evidence)", err)
		}
		return id, nil, nil
	}
	return hashing.Digest{}, raw, nil
}
