package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/policy"
)

// Policies is what the server needs from the policy store.
type Policies interface {
	Current() *policy.Set
	Version(ctx context.Context, n uint64) (*policy.Set, error)
	Put(ctx context.Context, c *policy.Compiled) (policy.PutResult, error)
	Delete(ctx context.Context, name string) (uint64, error)
}

// PolicyChecker is what the server needs from the solver: reading a
// policy before it is stored, and analysing one.
type PolicyChecker interface {
	Validate(ctx context.Context, c *policy.Compiled) error
	Lint(ctx context.Context, c *policy.Compiled, others []*policy.Compiled) (policy.LintReport, error)
}

var (
	_ Policies      = (*policy.Store)(nil)
	_ PolicyChecker = (*policy.Checker)(nil)
)

// LintBudget bounds the time one POST /v1/policies/lint may take.
const LintBudget = 30 * time.Second

// policyPutResponse answers a PUT or DELETE.
type policyPutResponse struct {
	Name    string          `json:"name"`
	ID      *hashing.Digest `json:"id,omitempty"` // absent after a delete
	Version uint64          `json:"version"`
	Digest  hashing.Digest  `json:"digest"` // of the set now in force
	Changed bool            `json:"changed"`
}

func (s *Server) getPolicies(c echo.Context) error {
	return c.JSON(http.StatusOK, s.policies.Current().Body())
}

func (s *Server) getPolicy(c echo.Context) error {
	name := c.Param("name")
	p, ok := s.policies.Current().Get(name)
	if !ok {
		return newError(ptNotFound, "no policy %q is in force; GET /v1/policies lists them", clipName(name))
	}
	return c.JSON(http.StatusOK, p.Body())
}

func (s *Server) getPolicyVersion(c echo.Context) error {
	n, err := strconv.ParseUint(c.Param("n"), 10, 64)
	if err != nil {
		return newError(ptMalformed, "version must be a non-negative integer, got %q", clipName(c.Param("n")))
	}
	set, err := s.policies.Version(c.Request().Context(), n)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, set.Body())
}

// compilePolicy reads, decodes, compiles and checks the request's policy
// body: its SMT-LIB, its pointers against the registry's parameters, and
// (with the solver) what only a solver can tell.
func (s *Server) compilePolicy(c echo.Context, name string) (*policy.Compiled, error) {
	if err := policy.ValidName(name); err != nil {
		return nil, newError(ptMalformed, "%v", err)
	}
	body, err := readBody(c, s.cfg.BodyLimit)
	if err != nil {
		return nil, err
	}
	// The policy's own members, spelt exactly: a misspelt or other-case
	// member is malformed JSON for this route, a 400.
	var probe struct {
		Smtlib    jsontext.Value `json:"smtlib"`
		Bind      jsontext.Value `json:"bind"`
		Allow     jsontext.Value `json:"allow"`
		AppliesTo jsontext.Value `json:"applies_to"`
		Derive    jsontext.Value `json:"derive"`
	}
	if err := decodeStrictBody(body, &probe, ` (a policy has smtlib, bind, allow, applies_to and derive)`); err != nil {
		return nil, err
	}
	ctx := c.Request().Context()
	p, err := policy.Decode(name, body)
	if err != nil {
		return nil, err
	}
	cp, err := policy.Compile(name, p)
	if err != nil {
		return nil, err
	}
	if err := cp.CheckRegistry(s.reg.Current()); err != nil {
		return nil, err
	}
	if err := s.checker.Validate(ctx, cp); err != nil {
		return nil, err
	}
	return cp, nil
}

func (s *Server) putPolicy(c echo.Context) error {
	name := c.Param("name")
	ctx := c.Request().Context()
	cp, err := s.compilePolicy(c, name)
	if err != nil {
		return err
	}
	_, existed := s.policies.Current().Get(name)
	res, err := s.policies.Put(ctx, cp)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if !existed {
		status = http.StatusCreated
	}
	id := res.Policy.ID
	return c.JSON(status, policyPutResponse{Name: name, ID: &id, Version: res.Version, Digest: s.policies.Current().Digest, Changed: res.Changed})
}

func (s *Server) deletePolicy(c echo.Context) error {
	name := c.Param("name")
	v, err := s.policies.Delete(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, policyPutResponse{Name: name, Version: v, Digest: s.policies.Current().Digest, Changed: true})
}

// postPolicyLint analyses a policy body without storing it: vacuity,
// tautology, redundant named assertions, constants no pointer binds, and
// conflicts with the policies in force (a policy of the same name, which
// this one would replace, excepted). ?name= names it (default "linted").
func (s *Server) postPolicyLint(c echo.Context) error {
	name := c.QueryParam("name")
	if name == "" {
		name = "linted"
	}
	ctx := c.Request().Context()
	cp, err := s.compilePolicy(c, name)
	if err != nil {
		return err
	}
	set := s.policies.Current()
	var others []*policy.Compiled
	for _, n := range set.Names() {
		if n != name {
			o, _ := set.Get(n)
			others = append(others, o)
		}
	}
	// Lint asks O(policies in force) questions, each bounded by the solver
	// timeout; the whole is bounded too: what is left when the budget runs
	// out is reported undecided, not answered with an error.
	ctx, cancel := context.WithTimeout(ctx, LintBudget)
	defer cancel()
	rep, err := s.checker.Lint(ctx, cp, others)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rep)
}

// clipName shortens a client-supplied name for a message.
func clipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
