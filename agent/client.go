package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Client talks to a groundgate server's REST API (docs/api.md, SPEC §7).
// It decodes leniently: fields it does not know are ignored, so a newer
// server does not break it.
type Client struct {
	base string
	hc   *http.Client
}

// maxBody bounds a response body the client reads (footprints of big grids
// carry every morphism).
const maxBody = 64 << 20

// NewClient returns a client for the server at base ("http://host:port").
// A nil hc uses a client with a 60 s timeout.
func NewClient(base string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http(s)://host[:port]", base)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &Client{base: strings.TrimRight(base, "/"), hc: hc}, nil
}

// Problem is an application/problem+json error answer (RFC 9457). It is
// the error type every Client method returns for a non-2xx status.
type Problem struct {
	Type      string     `json:"type"`
	Title     string     `json:"title"`
	Status    int        `json:"status"`
	Detail    string     `json:"detail"`
	Failures  []Failure  `json:"failures,omitempty"`
	Grounding *Grounding `json:"grounding,omitempty"`
}

func (p *Problem) Error() string {
	if p.Type == "" {
		return fmt.Sprintf("HTTP %d: %s", p.Status, p.Detail)
	}
	return fmt.Sprintf("HTTP %d %s: %s", p.Status, p.Type, p.Detail)
}

// Problem types the client acts on.
const (
	ProblemNotGrounded = "urn:groundgate:problem:not-grounded"
	ProblemNotFound    = "urn:groundgate:problem:not-found"
)

// The registry's published shapes, decoded as the registry package defines
// them (GET /v1/registry is registry.Export), so the harness sees exactly
// what the server publishes.
type (
	Export     = registry.Export
	Capability = registry.Capability
	Param      = registry.Param
)

// Match is one discovered capability (SPEC §4).
type Match struct {
	Term       string  `json:"term"`
	Name       string  `json:"name"`
	Kind       string  `json:"kind"`
	Mode       string  `json:"mode"`
	Confidence float64 `json:"confidence"`
	Capability string  `json:"capability"`
	Inverts    string  `json:"inverts,omitempty"`
}

// Discovery is the body of POST /v1/discover: content-addressed evidence.
type Discovery struct {
	ID         string   `json:"id"`
	Registry   string   `json:"registry"`
	Version    uint64   `json:"version"`
	Terms      []string `json:"terms"`
	Matches    []Match  `json:"matches"`
	Unresolved []string `json:"unresolved"`
	OK         bool     `json:"ok"`
}

// Names returns the distinct names matched with the given kind, sorted.
func (d *Discovery) Names(kind string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range d.Matches {
		if m.Kind == kind && !seen[m.Name] {
			seen[m.Name] = true
			out = append(out, m.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Failure is one failing field of a refused proposal (docs/failures.md).
type Failure struct {
	Field  string   `json:"field"`
	Code   string   `json:"code"`
	Codes  []string `json:"codes"`
	Value  string   `json:"value,omitempty"`
	Detail string   `json:"detail"`
}

// Decision is Γ's verdict.
type Decision struct {
	Admitted bool      `json:"admitted"`
	Failures []Failure `json:"failures"`
}

// Grounding is a grounding record: the 200 body of POST /v1/ground, or
// the "grounding" member of its 422 problem. ID is empty when the proposal
// was too malformed to be recorded.
type Grounding struct {
	ID              string          `json:"id,omitempty"`
	Request         json.RawMessage `json:"request,omitempty"`
	Discovery       string          `json:"discovery,omitempty"`
	RegistryVersion uint64          `json:"registry_version"`
	Registry        string          `json:"registry"`
	Decision        Decision        `json:"decision"`
}

// Request is the proposed pipeline (FPR) as the gate and executor see it.
type Request struct {
	Family string         `json:"family"`
	Metric string         `json:"metric"`
	Params map[string]any `json:"params"`
	Data   string         `json:"data"`
}

// Footprint is the body of POST /v1/executions and GET
// /v1/executions/{hash}, reduced to the fields SPEC §6 pins.
type Footprint struct {
	Hash            string            `json:"hash"`
	Layers          map[string]string `json:"layers"`
	Grounding       string            `json:"grounding,omitempty"`
	Request         Request           `json:"request"`
	RegistryVersion uint64            `json:"registry_version"`
	Registry        string            `json:"registry,omitempty"`
	Morphisms       []Morphism        `json:"morphisms"`
	Selected        *string           `json:"selected"`
}

// Morphism is one grid point of an execution.
type Morphism struct {
	Hash       string         `json:"hash"`
	Params     map[string]any `json:"params"`
	Admissible bool           `json:"admissible"`
	Rejected   []string       `json:"rejected"`
	Score      *float64       `json:"score"`
}

// Registry returns the current registry (GET /v1/registry).
func (c *Client) Registry(ctx context.Context) (*Export, error) {
	var out Export
	if err := c.do(ctx, http.MethodGet, "/v1/registry", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Discover runs discovery on a researcher's prompt.
func (c *Client) Discover(ctx context.Context, prompt string) (*Discovery, error) {
	var out Discovery
	if err := c.do(ctx, http.MethodPost, "/v1/discover", map[string]any{"prompt": prompt}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DiscoverTerms runs discovery on an explicit term list.
func (c *Client) DiscoverTerms(ctx context.Context, terms []string) (*Discovery, error) {
	var out Discovery
	if err := c.do(ctx, http.MethodPost, "/v1/discover", map[string]any{"terms": terms}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Ground submits a proposal with the id of its discovery evidence. Both an
// admission (200) and a refusal (422 not-grounded) return the decision and
// a nil error; any other answer is a *Problem. The request is sent as
// given, so a proposal that is not a well-formed request reaches the gate
// as it is.
func (c *Client) Ground(ctx context.Context, request any, discovery string) (*Grounding, error) {
	var out Grounding
	err := c.do(ctx, http.MethodPost, "/v1/ground", map[string]any{"request": request, "discovery": discovery}, &out)
	var p *Problem
	switch {
	case err == nil:
		return &out, nil
	case errors.As(err, &p) && p.Type == ProblemNotGrounded:
		g := p.Grounding
		if g == nil {
			g = &Grounding{}
		}
		if len(g.Decision.Failures) == 0 {
			g.Decision.Failures = p.Failures
		}
		g.Decision.Admitted = false
		return g, nil
	default:
		return nil, err
	}
}

// Execute runs an admitted grounding (POST /v1/executions) and returns the
// footprint. It returns an error wrapping ErrNoExecutor when the server
// does not serve the route.
func (c *Client) Execute(ctx context.Context, grounding string) (*Footprint, error) {
	var out Footprint
	err := c.do(ctx, http.MethodPost, "/v1/executions", map[string]any{"grounding": grounding}, &out)
	if noRoute(err) {
		return nil, fmt.Errorf("execute %s: %w", grounding, ErrNoExecutor)
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Execution reads a stored footprint (GET /v1/executions/{hash}).
func (c *Client) Execution(ctx context.Context, hash string) (*Footprint, error) {
	var out Footprint
	if err := c.do(ctx, http.MethodGet, "/v1/executions/"+url.PathEscape(hash), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExecutionsAvailable probes POST /v1/executions with an empty grounding:
// a server with an executor refuses it as malformed (4xx other than 404,
// 405 and 501), one without answers 404, 405 or 501. It returns nil when
// the route is served, an error wrapping ErrNoExecutor when it is not, and
// any other error as it came.
func (c *Client) ExecutionsAvailable(ctx context.Context) error {
	err := c.do(ctx, http.MethodPost, "/v1/executions", map[string]any{}, nil)
	var p *Problem
	switch {
	case noRoute(err):
		return fmt.Errorf("probe: %w", ErrNoExecutor)
	case err == nil, errors.As(err, &p) && p.Status >= 400 && p.Status < 500:
		return nil
	default:
		return err
	}
}

// noRoute reports whether err says the executions route is not served.
func noRoute(err error) bool {
	var p *Problem
	if !errors.As(err, &p) {
		return false
	}
	switch p.Status {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		// A 404 for an unknown grounding would name the grounding; the
		// harness only executes ids the server just issued, so a 404
		// here means the route is missing.
		return true
	}
	return false
}

// do sends one request. in, when not nil, is sent as JSON; a 2xx body is
// decoded into out (when not nil); anything else becomes a *Problem.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("%s %s: read: %w", method, path, err)
	}
	if len(raw) > maxBody {
		return fmt.Errorf("%s %s: response over %d bytes", method, path, maxBody)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		p := &Problem{Status: resp.StatusCode}
		if hashing.DecodeFields(raw, p) != nil || p.Status == 0 {
			p.Status = resp.StatusCode
		}
		if p.Detail == "" {
			p.Detail = strings.TrimSpace(string(raw))
			if len(p.Detail) > 300 {
				p.Detail = p.Detail[:300] + "…"
			}
		}
		return p
	}
	if out == nil {
		return nil
	}
	if err := hashing.DecodeFields(raw, out); err != nil {
		return fmt.Errorf("%s %s: decode: %w", method, path, err)
	}
	return nil
}
