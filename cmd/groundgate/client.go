package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/server"
)

// Commands that act on what a running server owns (the gateway's
// upstreams: long-lived connections) talk to its REST API instead of
// opening the database: --server names it, GROUNDGATE_ADMIN_TOKEN is sent
// as the bearer token, and what they print is the REST body.

// defaultServer is the server `groundgate serve` runs by default.
const defaultServer = "http://127.0.0.1:8080"

// maxResponse bounds a REST answer the CLI reads.
const maxResponse = 64 << 20

// apiClient is a running server's REST API.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

// serverFlag adds --server to fs; its default is GROUNDGATE_SERVER, else
// defaultServer. The client is made after parsing.
func (c *CLI) serverFlag(fs *flag.FlagSet) func() (*apiClient, error) {
	def := c.Getenv("GROUNDGATE_SERVER")
	if def == "" {
		def = defaultServer
	}
	url := fs.String("server", def, "the running server's base `URL` ($GROUNDGATE_SERVER when set); GROUNDGATE_ADMIN_TOKEN is sent as its bearer token")
	return func() (*apiClient, error) {
		base := strings.TrimRight(*url, "/")
		if base == "" {
			return nil, fmt.Errorf("%w: --server is empty", errUsage)
		}
		if !strings.Contains(base, "://") {
			base = "http://" + base // HOST:PORT, as serve's --addr
		}
		if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
			return nil, fmt.Errorf("%w: --server %q: give an http or https URL", errUsage, *url)
		}
		return &apiClient{base: base, token: c.Getenv("GROUNDGATE_ADMIN_TOKEN"), http: http.DefaultClient}, nil
	}
}

// problemError is a REST problem (RFC 9457) the server answered with.
type problemError struct {
	Status   int    `json:"status"`
	Type     string `json:"type"`
	Title    string `json:"title"`
	Detail   string `json:"detail"`
	Failures []struct {
		Field  string `json:"field"`
		Code   string `json:"code"`
		Detail string `json:"detail"`
	} `json:"failures"`
	Errors []struct {
		Field   string `json:"field"`
		Problem string `json:"problem"`
	} `json:"errors"`
}

// Kind is the kind of the problem's type, so that the CLI's exit status
// says the same of a server's answer as of a local error.
func (p *problemError) Kind() errkind.Kind { return server.KindOfProblem(p.Type) }

func (p *problemError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", p.Status, p.Title)
	if t := strings.TrimPrefix(p.Type, "urn:groundgate:problem:"); t != "" {
		fmt.Fprintf(&b, " (%s)", t)
	}
	if p.Detail != "" {
		fmt.Fprintf(&b, ": %s", p.Detail)
	}
	for _, f := range p.Failures {
		fmt.Fprintf(&b, "\n  %s %s: %s", f.Code, f.Field, f.Detail)
	}
	for _, e := range p.Errors {
		fmt.Fprintf(&b, "\n  %s: %s", e.Field, e.Problem)
	}
	return b.String()
}

// do sends one request (body nil: none) and returns the answer's body
// and status. An answer that is not 2xx is a *problemError.
func (a *apiClient) do(ctx context.Context, method, path string, body []byte) ([]byte, int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return nil, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot reach the server (is `groundgate serve` running there? --server): %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if len(b) > maxResponse {
		return nil, resp.StatusCode, fmt.Errorf("%s %s: the answer is over %d bytes", method, path, maxResponse)
	}
	if resp.StatusCode/100 != 2 {
		p := &problemError{}
		if json.Unmarshal(b, p) != nil || p.Title == "" {
			p = &problemError{Title: http.StatusText(resp.StatusCode), Detail: strings.TrimSpace(string(b))}
		}
		p.Status = resp.StatusCode
		return nil, resp.StatusCode, p
	}
	if !json.Valid(b) {
		return nil, resp.StatusCode, fmt.Errorf("%s %s: the answer is not JSON", method, path)
	}
	return b, resp.StatusCode, nil
}
