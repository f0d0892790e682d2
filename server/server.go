// Package server is groundgate's REST API on echo: the registry, discovery
// and the grounding gate (SPEC §7). Handlers decode strictly, call the
// domain packages, and leave every error to one problem+json mapping.
package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/series"
)

// Registry is what the server needs from the registry store.
type Registry interface {
	Current() *registry.Snapshot
	Version(ctx context.Context, n uint64) (*registry.Snapshot, error)
	History(ctx context.Context) ([]registry.VersionInfo, error)
	Put(ctx context.Context, e registry.Entry) (registry.PutResult, error)
}

// Discoverer is what the server needs from discovery.
type Discoverer interface {
	Discover(ctx context.Context, q discover.Query) (discover.Result, error)
	Lookup(ctx context.Context, id hashing.Digest) (discover.Result, error)
	// Ready says, without waiting, whether every discovery tier answers.
	Ready() error
}

// Gate is what the server needs from Γ.
type Gate interface {
	Ground(ctx context.Context, p ground.Proposal) (ground.Outcome, error)
	Record(ctx context.Context, id hashing.Digest) (ground.Record, error)
	Load(ctx context.Context, id hashing.Digest) (*ground.Grounded, error)
}

// Executor is what the server needs from the executor.
type Executor interface {
	Execute(ctx context.Context, g *ground.Grounded) (*execution.Footprint, error)
	Get(ctx context.Context, hash hashing.Digest) (*execution.Footprint, error)
	Replay(ctx context.Context, hash hashing.Digest) (*execution.ReplayReport, error)
	Diff(ctx context.Context, a, b hashing.Digest) (*execution.DiffReport, error)
	CheckContracts(ctx context.Context, req ground.Request, withData bool) (*execution.ContractReport, error)
	PnL(ctx context.Context, hash hashing.Digest, index int) (execution.Morphism, *series.Table, error)
}

var (
	_ Registry   = (*registry.Store)(nil)
	_ Discoverer = (*discover.Discoverer)(nil)
	_ Gate       = (*ground.Gate)(nil)
	_ Executor   = (*execution.Executor)(nil)
)

// Deps are the domain services the API serves.
type Deps struct {
	Registry   Registry
	Discoverer Discoverer
	Gate       Gate
	Executor   Executor
	Policies   Policies
	Checker    PolicyChecker
	// FuzzRuns serves /v1/fuzz/runs; nil answers them 404.
	FuzzRuns FuzzRuns
	// Attester serves the attestation routes (SPEC §13); nil answers
	// them 404 and lists no key.
	Attester Attester
	// Upstreams and Calls serve the gateway (SPEC §14); nil answers
	// their routes 404. Screen flags poisoned tool words at sync.
	Upstreams Upstreams
	Calls     Calls
	Screen    gateway.Screen
	// Sessions serves SPEC §15's routes; nil answers them 404.
	Sessions Sessions
}

// Config holds the server's settings.
type Config struct {
	// AdminToken authorises registry writes; empty refuses every write.
	AdminToken string
	// BodyLimit bounds request bodies in bytes (default 1 MiB).
	BodyLimit int64
	// HeaderLimit bounds the request line and header fields in bytes
	// (default 64 KiB); larger requests get a 431 problem. net/http's own
	// http.Server.MaxHeaderBytes must be set above it, or net/http
	// refuses first with a text/plain 431 (see HTTPMaxHeaderBytes).
	HeaderLimit int
	// Logger receives access and error logs (discarded when nil).
	Logger *slog.Logger
	// Refresh, when set, runs before every request that reads stored
	// state (not health, metrics, the API description or the UI's files):
	// a replica over a shared store brings its in-memory views up to
	// date with it there. Its error is the request's answer (a store
	// outage is kind unavailable: 503).
	Refresh func(ctx context.Context) error
}

// Server is the HTTP API. Build it with New and serve Handler().
type Server struct {
	reg  Registry
	disc Discoverer
	gate Gate
	exec Executor
	// policies and checker serve SPEC §10's routes.
	policies Policies
	checker  PolicyChecker
	fuzz     FuzzRuns
	ups      Upstreams
	calls    Calls
	sessions Sessions
	screen   gateway.Screen
	// mcpBody bounds bodies at /mcp (MountMCP).
	mcpBody int64
	cfg     Config
	log     *slog.Logger
	echo    *echo.Echo
	reqs    *prometheus.CounterVec
	lat     *prometheus.HistogramVec
	gates   *prometheus.CounterVec
	// series caches the per-route metric children accessLog feeds, so
	// that a request does not hash its labels again (see routeMetrics).
	series sync.Map // seriesKey → routeMetrics

	// mcpSessions serves /mcp to session tokens (MountSessionMCP).
	mcpSessions http.Handler
}

// New wires the routes.
func New(d Deps, cfg Config) *Server {
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 1 << 20
	}
	if cfg.HeaderLimit <= 0 {
		cfg.HeaderLimit = DefaultHeaderLimit
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{reg: d.Registry, disc: d.Discoverer, gate: d.Gate, exec: d.Executor, policies: d.Policies, checker: d.Checker, fuzz: d.FuzzRuns, ups: d.Upstreams, calls: d.Calls, sessions: d.Sessions, screen: d.Screen, cfg: cfg, log: cfg.Logger}

	promReg := prometheus.NewRegistry()
	promReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.reqs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "groundgate_http_requests_total", Help: "HTTP requests by route, method and status.",
	}, []string{"route", "method", "status"})
	s.lat = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "groundgate_http_request_duration_seconds", Help: "HTTP request latency by route.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
	}, []string{"route"})
	s.gates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "groundgate_gate_decisions_total", Help: "Grounding decisions by outcome.",
	}, []string{"admitted"})
	promReg.MustRegister(s.reqs, s.lat, s.gates)

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(middleware.RequestIDWithConfig(middleware.RequestIDConfig{Generator: requestID}))
	e.Use(s.accessLog)
	e.Use(middleware.Recover())
	e.Use(s.limitHeader)
	e.Use(s.checkBody)
	e.Use(decodeParams)
	if cfg.Refresh != nil {
		e.Use(s.refresh)
	}

	// RFC 9110 §9.3.2: HEAD is answered wherever GET is, with GET's status
	// and headers; net/http drops the body.
	get := func(path string, h echo.HandlerFunc) { e.Match([]string{http.MethodGet, http.MethodHead}, path, h) }
	get("/healthz", s.healthz)
	get("/readyz", s.readyz)
	get("/metrics", echo.WrapHandler(promhttp.HandlerFor(promReg, promhttp.HandlerOpts{})))
	get("/openapi.json", s.openapi)

	get("/v1/registry", s.getRegistry)
	get("/v1/registry/history", s.getHistory)
	get("/v1/registry/capabilities/:name", s.getCapability)
	e.PUT("/v1/registry/capabilities/:name", s.putCapability, s.requireAdmin)
	get("/v1/registry/versions/:n", s.getVersion)
	e.POST("/v1/discover", s.postDiscover)
	get("/v1/discoveries/:id", s.getDiscovery)
	e.POST("/v1/ground", s.postGround)
	get("/v1/groundings/:id", s.getGrounding)
	e.POST("/v1/executions", s.postExecution)
	get("/v1/executions/:hash", s.getExecution)
	att := attestHandlers{d.Attester}
	get("/v1/executions/:hash/attestation", att.getAttestation)
	get("/v1/keys", att.getKeys)
	e.POST("/v1/executions/:hash/replay", s.postReplay)
	get("/v1/executions/:hash/morphisms/:index/pnl", s.getPnL)
	get("/v1/diff/:a/:b", s.getDiff)
	e.POST("/v1/contracts/check", s.postContractCheck)
	get("/v1/policies", s.getPolicies)
	get("/v1/policies/versions/:n", s.getPolicyVersion)
	get("/v1/policies/:name", s.getPolicy)
	e.PUT("/v1/policies/:name", s.putPolicy, s.requireAdmin)
	e.DELETE("/v1/policies/:name", s.deletePolicy, s.requireAdmin)
	e.POST("/v1/policies/lint", s.postPolicyLint)
	e.POST("/v1/fuzz/runs", s.postFuzzRun, s.requireAdmin)
	get("/v1/fuzz/runs", s.getFuzzRuns)
	get("/v1/fuzz/runs/:id", s.getFuzzRun)
	e.DELETE("/v1/fuzz/runs/:id", s.deleteFuzzRun, s.requireAdmin)
	s.routeGateway(e, get)
	s.routeSessions(e, get)
	routeUI(get)
	s.echo = e
	return s
}

// refresh runs Config.Refresh before a request that reads stored state.
func (s *Server) refresh(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch p := c.Request().URL.Path; {
		case p == "/healthz", p == "/readyz", p == "/metrics", p == "/openapi.json", strings.HasPrefix(p, "/ui/"):
		default:
			if err := s.cfg.Refresh(c.Request().Context()); err != nil {
				return err
			}
		}
		return next(c)
	}
}

// DefaultHeaderLimit is the default Config.HeaderLimit.
const DefaultHeaderLimit = 64 << 10

// HTTPMaxHeaderBytes is what http.Server.MaxHeaderBytes should be for a
// server with the default header limit: well above it, so that requests
// between the two limits get this server's 431 problem+json. Only a header
// block beyond HTTPMaxHeaderBytes (plus net/http's 4 KiB slack) is refused
// by net/http itself, as text/plain, before any handler runs.
const HTTPMaxHeaderBytes = 1 << 20

// Handler returns the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.echo }

// Echo exposes the router so that later stages (executions) can add
// routes with the same middleware and error mapping.
func (s *Server) Echo() *echo.Echo { return s.echo }

// accessLog writes one structured line per request and feeds the metrics.
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err) // write the problem now so the status is known
		}
		dur := time.Since(start)
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		req, res := c.Request(), c.Response()
		m := s.routeMetrics(route, req.Method, res.Status)
		m.reqs.Inc()
		m.lat.Observe(dur.Seconds())
		// The handler directly, not Logger.LogAttrs: that also records the
		// caller's program counter (runtime.Callers, a stack walk per
		// request) for a source location no access line shows.
		ctx := req.Context()
		h := s.log.Handler()
		if !h.Enabled(ctx, slog.LevelInfo) {
			return nil
		}
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "http", 0)
		r.AddAttrs(
			slog.String("request_id", res.Header().Get(echo.HeaderXRequestID)),
			slog.String("method", req.Method),
			slog.String("path", req.URL.Path),
			slog.String("route", route),
			slog.Int("status", res.Status),
			slog.Int64("bytes", res.Size),
			slog.Duration("duration", dur),
			slog.String("remote", c.RealIP()))
		_ = h.Handle(ctx, r)
		return nil
	}
}

type seriesKey struct {
	route, method string
	status        int
}

// routeMetrics are the metric children of one route, method and status.
type routeMetrics struct {
	reqs prometheus.Counter
	lat  prometheus.Observer
}

// routeMetrics returns the children for route, method and status, made
// once: the cache holds one entry per label set, as the vectors do.
func (s *Server) routeMetrics(route, method string, status int) routeMetrics {
	k := seriesKey{route, method, status}
	if m, ok := s.series.Load(k); ok {
		return m.(routeMetrics)
	}
	m := routeMetrics{reqs: s.reqs.WithLabelValues(route, method, statusLabel(status)), lat: s.lat.WithLabelValues(route)}
	s.series.Store(k, m)
	return m
}

// requestID makes an X-Request-Id as echo's default does (32 letters),
// from the runtime's per-thread generator instead of crypto/rand: the id
// correlates a response with its log line and is no secret (a client may
// send its own).
func requestID() string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	var b [32]byte
	for i := 0; i < len(b); {
		// Ten 6-bit draws from 64 random bits; draws of 52 and up are
		// skipped, so that every letter is equally likely.
		r := rand.Uint64()
		for range 10 {
			if v := r & 63; v < uint64(len(letters)) && i < len(b) {
				b[i] = letters[v]
				i++
			}
			r >>= 6
		}
	}
	return string(b[:])
}

// limitHeader refuses a request whose request line and header fields
// exceed the header limit, counted as net/http counts them on the wire.
func (s *Server) limitHeader(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if n := headerSize(c.Request()); n > s.cfg.HeaderLimit {
			return newError(ptHeaderTooLarge, "the request line and header fields are %d bytes; the limit is %d", n, s.cfg.HeaderLimit)
		}
		return next(c)
	}
}

// headerSize is the size of r's request line and header block as sent:
// "METHOD URI PROTO\r\n", then "Key: value\r\n" per field (Host is kept
// apart from r.Header by net/http).
func headerSize(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	if r.Host != "" {
		n += len("Host: ") + len(r.Host) + 2
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n + 2
}

// checkBody refuses, before any byte of the body is read, a body declared
// too large, a write whose media type is not JSON, and any content coding:
// refusing early lets net/http answer a client that sent Expect:
// 100-continue at once instead of waiting for a body it will not use. The
// size limit itself is applied where the body is read (readBody).
func (s *Server) checkBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		limit := s.cfg.BodyLimit
		if c.Path() == MCPPath {
			limit = s.mcpBody
		}
		if r.ContentLength > limit {
			return newError(ptTooLarge, "the body is %d bytes; the limit is %d", r.ContentLength, limit)
		}
		if r.Method == http.MethodPost || r.Method == http.MethodPut {
			// The common case without mime.ParseMediaType's map.
			if ct := r.Header.Get(echo.HeaderContentType); ct != "" && ct != echo.MIMEApplicationJSON {
				mt, _, err := mime.ParseMediaType(ct)
				if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
					return newError(ptMediaType, "Content-Type %q: send application/json", ct)
				}
			}
			for _, v := range r.Header.Values(echo.HeaderContentEncoding) {
				for _, coding := range strings.Split(v, ",") {
					if coding = strings.TrimSpace(coding); coding != "" && !strings.EqualFold(coding, "identity") {
						return newError(ptMediaType, "Content-Encoding %q is not supported: send the JSON body uncompressed", coding)
					}
				}
			}
		}
		return next(c)
	}
}

// decodeParams percent-decodes every path parameter once, for every route:
// echo matches on the escaped path, so /v1/executions/sha256%3A… would
// otherwise reach the handler still encoded.
func decodeParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		vals := c.ParamValues()
		// echo routes on URL.RawPath only when the request has one (the
		// path held escapes that decode to something else); otherwise on
		// URL.Path, which net/http has already decoded once. Decoding
		// again would make "%254D" name "M".
		if len(vals) == 0 || c.Request().URL.RawPath == "" {
			return next(c)
		}
		dec := make([]string, len(vals))
		for i, v := range vals {
			d, err := url.PathUnescape(v)
			if err != nil {
				return newError(ptMalformed, "path parameter %q: %v", c.ParamNames()[i], err)
			}
			dec[i] = d
		}
		c.SetParamValues(dec...)
		return next(c)
	}
}

// requireAdmin checks the bearer token in constant time. With no token
// configured every write is refused.
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return s.requireToken("every registry write is refused", "registry writes need", next)
}

// requireToken is requireAdmin with its wording: off says what is refused
// without a token, need what the token is needed for.
func (s *Server) requireToken(off, need string, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.AdminToken == "" {
			return newError(ptWritesOff, "this server has no admin token configured (set GROUNDGATE_ADMIN_TOKEN), so %s", off)
		}
		auth := c.Request().Header.Get(echo.HeaderAuthorization)
		token, ok := strings.CutPrefix(auth, "Bearer ")
		// Compare digests so that neither content nor length leaks in timing.
		got, want := sha256.Sum256([]byte(token)), sha256.Sum256([]byte(s.cfg.AdminToken))
		if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			return newError(ptUnauthorized, "%s Authorization: Bearer <admin token>", need)
		}
		return next(c)
	}
}

// MountMCP serves h, the Model Context Protocol's streamable HTTP handler
// (package mcp), at /mcp, with this server's middleware: the access log,
// metrics, header limit, and the admin token, as for registry writes (an
// agent that can execute is as trusted as one that can write). A session's
// token (ggs_…) is served by MountSessionMCP's handler instead: that
// session's tools only. Its bodies are bounded by maxBody instead of
// BodyLimit: a JSON-RPC message carries tool arguments up to BodyLimit and
// its own envelope, and arguments over their limit get a JSON-RPC error
// from the tool, not an HTTP 413.
func (s *Server) MountMCP(h http.Handler, maxBody int64) {
	s.mcpBody = maxBody
	s.echo.Match([]string{http.MethodGet, http.MethodPost, http.MethodDelete}, MCPPath, echo.WrapHandler(h), s.mcpAuth)
}

// MCPPath is where MountMCP serves.
const MCPPath = "/mcp"

// readyz is readiness, for a load balancer: 200 only once every discovery
// tier answers (the keyword tier's text index is built in the background
// at start, which on a large registry takes a while); until then 503, so
// that no request is routed to a half-built index.
func (s *Server) readyz(c echo.Context) error {
	if err := s.disc.Ready(); err != nil {
		return err // discover.ErrStarting is a not-ready problem
	}
	cur := s.reg.Current()
	return c.JSON(http.StatusOK, map[string]any{"status": "ready", "version": cur.Version(), "registry": cur.Registry()})
}

func (s *Server) healthz(c echo.Context) error {
	cur := s.reg.Current()
	return c.JSON(http.StatusOK, map[string]any{"status": "ok", "version": cur.Version(), "registry": cur.Registry()})
}
