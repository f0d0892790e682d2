package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/fuzz/runs"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/session"
)

// Problem is an RFC 9457 problem detail. Type is a stable URN per kind of
// error (docs/api.md lists them); Detail is for a person.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance,omitempty"`
	// RequestID correlates the problem with the access log.
	RequestID string `json:"request_id,omitempty"`

	// Gate refusals.
	Failures  []ground.Failure `json:"failures,omitempty"`
	Grounding *Grounding       `json:"grounding,omitempty"`
	// Entry validation.
	Errors []registry.FieldError `json:"errors,omitempty"`
	// Duplicate identities.
	Existing string `json:"existing,omitempty"`
	// Call is the footprint of a call to an upstream tool that ran (an
	// upstream failure, a result refused by F10).
	Call *calls.Footprint `json:"call,omitempty"`
	// Session is a session's record of the call (POST
	// /v1/sessions/{id}/calls): refused calls are recorded too.
	Session *session.CallRecord `json:"session,omitempty"`
}

const problemPrefix = "urn:groundgate:problem:"

// Problem types. Each is stable: clients may switch on them.
const (
	ptMalformed      = "malformed-request"
	ptBadQuery       = "bad-query"
	ptInvalidEntry   = "invalid-entry"
	ptNotGrounded    = "not-grounded"
	ptNotFound       = "not-found"
	ptDuplicate      = "duplicate-identity"
	ptUnauthorized   = "unauthorized"
	ptWritesOff      = "writes-disabled"
	ptTooLarge       = "body-too-large"
	ptHeaderTooLarge = "header-too-large"
	ptMediaType      = "unsupported-media-type"
	ptMethod         = "method-not-allowed"
	ptCorrupt        = "corrupt-record"
	ptInternal       = "internal"
	ptNotAdmitted    = "not-admitted"
	ptBadData        = "bad-data"
	ptDrift          = "registry-drift"
	ptOverBudget     = "over-budget"
	ptNotRunnable    = "not-runnable"
	ptBusy           = "busy"
	ptInvalidPolicy  = "invalid-policy"
	ptPolicyRefused  = "policy-refused"
	ptNoSolver       = "solver-unavailable"
	ptDataChanged    = "data-changed"
	ptClientClosed   = "client-closed-request"
	ptFuzzRunning    = "fuzz-run-in-progress"
	ptInvalidFuzzRun = "invalid-fuzz-run"
	ptNotReady       = "not-ready"
	// The gateway (SPEC §14).
	ptInvalidUpstream = "invalid-upstream"
	ptInvalidOverlay  = "invalid-overlay"
	ptNotReplayable   = "not-replayable"
	ptCallRefused     = "call-refused"
	ptResultRefused   = "result-refused"
	ptSessionClosed   = "session-closed"
)

// retryAfterSeconds is what a busy executor asks a client to wait: about
// one typical execution.
const retryAfterSeconds = "5"

// StatusClientClosedRequest is nginx's non-standard 499: the client went
// away before the answer was ready. Nobody receives it; it keeps client
// cancellations apart from server failures in logs and metrics.
const StatusClientClosedRequest = 499

// kinds gives every problem type its one status and title: handlers pick a
// kind, never a status code.
var kinds = map[string]struct {
	status int
	title  string
}{
	ptMalformed:       {http.StatusBadRequest, "Malformed request"},
	ptBadQuery:        {http.StatusBadRequest, "Bad discovery query"},
	ptInvalidEntry:    {http.StatusUnprocessableEntity, "Invalid capability entry"},
	ptNotGrounded:     {http.StatusUnprocessableEntity, "Request not grounded"},
	ptNotFound:        {http.StatusNotFound, "Not found"},
	ptDuplicate:       {http.StatusConflict, "Duplicate capability identity"},
	ptUnauthorized:    {http.StatusUnauthorized, "Unauthorized"},
	ptWritesOff:       {http.StatusForbidden, "Registry writes are disabled"},
	ptTooLarge:        {http.StatusRequestEntityTooLarge, "Request body too large"},
	ptHeaderTooLarge:  {http.StatusRequestHeaderFieldsTooLarge, "Request header fields too large"},
	ptMediaType:       {http.StatusUnsupportedMediaType, "Unsupported media type"},
	ptMethod:          {http.StatusMethodNotAllowed, "Method not allowed"},
	ptCorrupt:         {http.StatusInternalServerError, "Stored record is corrupt"},
	ptInternal:        {http.StatusInternalServerError, "Internal server error"},
	ptNotAdmitted:     {http.StatusUnprocessableEntity, "Grounding was not admitted"},
	ptBadData:         {http.StatusUnprocessableEntity, "Bad source data"},
	ptDrift:           {http.StatusConflict, "Registry drift"},
	ptOverBudget:      {http.StatusUnprocessableEntity, "Execution over budget"},
	ptNotRunnable:     {http.StatusUnprocessableEntity, "Capability not runnable"},
	ptBusy:            {http.StatusServiceUnavailable, "Executor busy"},
	ptInvalidPolicy:   {http.StatusUnprocessableEntity, "Invalid policy"},
	ptPolicyRefused:   {http.StatusUnprocessableEntity, "Refused by the policies in force"},
	ptNoSolver:        {http.StatusServiceUnavailable, "Policy solver unavailable"},
	ptDataChanged:     {http.StatusConflict, "Data changed since grounding"},
	ptClientClosed:    {StatusClientClosedRequest, "Client closed request"},
	ptFuzzRunning:     {http.StatusConflict, "A fuzz run is in progress"},
	ptInvalidFuzzRun:  {http.StatusUnprocessableEntity, "Invalid fuzz run"},
	ptNotReady:        {http.StatusServiceUnavailable, "Not ready"},
	ptInvalidUpstream: {http.StatusBadRequest, "Invalid upstream configuration"},
	ptInvalidOverlay:  {http.StatusUnprocessableEntity, "Invalid sync overlay"},
	ptNotReplayable:   {http.StatusConflict, "Call not replayable"},
	ptCallRefused:     {http.StatusUnprocessableEntity, "Call not admitted"},
	ptResultRefused:   {http.StatusUnprocessableEntity, "Call result refused"},
	ptSessionClosed:   {http.StatusConflict, "Session closed"},
	// An upstream's failures: gateway.Kind chooses the type and status.
	"upstream-timeout":           {http.StatusGatewayTimeout, "Upstream timed out"},
	"upstream-busy":              {http.StatusServiceUnavailable, "Upstream busy"},
	"upstream-result-too-large":  {http.StatusBadGateway, "Upstream result too large"},
	"upstream-protocol-error":    {http.StatusBadGateway, "Upstream protocol error"},
	"upstream-rejected":          {http.StatusBadGateway, "Upstream rejected the call"},
	"upstream-tool-list-refused": {http.StatusBadGateway, "Upstream tool list refused"},
	"upstream-unavailable":       {http.StatusBadGateway, "Upstream unavailable"},
}

// statusLabel is the metrics label for a status: its text, with nginx's
// name for 499, which net/http does not know.
func statusLabel(status int) string {
	if status == StatusClientClosedRequest {
		return "Client Closed Request"
	}
	return http.StatusText(status)
}

// apiError is an error a handler returns with its problem already chosen.
type apiError struct {
	kind   string
	detail string
	extra  func(*Problem)
}

func (e *apiError) Error() string { return e.kind + ": " + e.detail }

// problemError carries a problem built elsewhere (GroundingResponse) to the
// error handler, which adds instance and request id like for any other.
type problemError struct{ p Problem }

func (e problemError) Error() string { return e.p.Type + ": " + e.p.Detail }

// newError is an error of a kind; the kind decides the status.
func newError(kind, format string, args ...any) *apiError {
	return &apiError{kind: kind, detail: fmt.Sprintf(format, args...)}
}

// problemFor maps any error to a status and problem, in one place, and says
// whether its cause belongs in the error log. ctx is the request's context:
// a cancellation is the client's doing only when that context ended.
// Errors it does not recognise become a generic 500; their text is logged,
// never sent.
func problemFor(ctx context.Context, err error) (int, Problem, bool) {
	var (
		ae  *apiError
		he  *echo.HTTPError
		ve  *registry.ValidationError
		pve *policy.ValidationError
		pre *ground.PolicyError
		de  *registry.DuplicateError
		mbe *http.MaxBytesError
		cre *calls.Refusal
		cue *calls.UpstreamError
	)
	p := func(kind, detail string) (int, Problem, bool) {
		k := kinds[kind]
		return k.status, Problem{Type: problemPrefix + kind, Title: k.title, Status: k.status, Detail: detail}, k.status >= 500
	}
	var (
		pe  problemError
		sce *sessionCallError
	)
	switch {
	case errors.As(err, &sce):
		st, pr, logIt := problemFor(ctx, sce.err)
		rec := sce.record
		pr.Session = &rec
		return st, pr, logIt
	case errors.Is(err, session.ErrNotFound):
		return p(ptNotFound, err.Error())
	case errors.Is(err, session.ErrUnauthorized):
		return p(ptUnauthorized, "this session needs Authorization: Bearer <its token> (or the admin token)")
	case errors.Is(err, session.ErrClosed):
		return p(ptSessionClosed, err.Error()+": open a new session")
	case errors.Is(err, session.ErrTooLarge):
		return p(ptTooLarge, err.Error())
	case errors.Is(err, session.ErrInvalid):
		return p(ptMalformed, err.Error())
	case errors.Is(err, session.ErrCorrupt):
		return p(ptCorrupt, "a stored record failed its integrity check; run `groundgate registry verify`")
	case errors.As(err, &pe):
		return pe.p.Status, pe.p, false
	case errors.As(err, &ae):
		st, pr, logIt := p(ae.kind, ae.detail)
		if ae.extra != nil {
			ae.extra(&pr)
		}
		return st, pr, logIt
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return p(ptClientClosed, "the client closed the request before the answer was ready")
	case errors.As(err, &cre):
		kind := ptCallRefused
		if cre.Call != nil {
			kind = ptResultRefused
		}
		st, pr, _ := p(kind, refusalDetail(cre.Failures))
		pr.Failures, pr.Call = cre.Failures, cre.Call
		return st, pr, false
	case errors.As(err, &cue):
		st, pr, _ := p(cue.Call.Error.Type, cue.Err.Error())
		pr.Call = cue.Call
		return st, pr, false
	case errors.Is(err, gateway.ErrInvalidConfig):
		return p(ptInvalidUpstream, err.Error())
	case errors.Is(err, gateway.ErrInvalidOverlay):
		return p(ptInvalidOverlay, err.Error())
	case errors.Is(err, calls.ErrNotReplayable):
		return p(ptNotReplayable, err.Error())
	case errors.Is(err, gateway.ErrNoUpstream), errors.Is(err, calls.ErrNotFound), errors.Is(err, calls.ErrNoSigner):
		return p(ptNotFound, err.Error())
	case errors.Is(err, calls.ErrCorrupt):
		return p(ptCorrupt, "a stored record failed its integrity check; run `groundgate registry verify`")
	case errors.As(err, &mbe):
		return p(ptTooLarge, fmt.Sprintf("the body is larger than %d bytes", mbe.Limit))
	case errors.As(err, &ve):
		st, pr, _ := p(ptInvalidEntry, ve.Error())
		pr.Errors = ve.Fields
		return st, pr, false
	case errors.As(err, &pve):
		st, pr, _ := p(ptInvalidPolicy, pve.Error())
		pr.Errors = pve.Fields
		return st, pr, false
	case errors.Is(err, policy.ErrInvalid), errors.Is(err, policy.ErrTooMany):
		return p(ptInvalidPolicy, err.Error())
	case errors.As(err, &pre):
		st, pr, _ := p(ptPolicyRefused, pre.Error()+": "+refusalDetail(pre.Failures))
		pr.Failures = pre.Failures
		return st, pr, false
	case errors.Is(err, policy.ErrNoSolver), errors.Is(err, policy.ErrSolver):
		st, pr, _ := p(ptNoSolver, err.Error()+"; the request was not admitted, retry later")
		return st, pr, true
	case errors.Is(err, execution.ErrDataChanged):
		return p(ptDataChanged, err.Error())
	case errors.As(err, &de):
		st, pr, _ := p(ptDuplicate, de.Error())
		pr.Existing = de.Existing
		return st, pr, false
	case errors.Is(err, registry.ErrInvalidEntry):
		return p(ptInvalidEntry, err.Error())
	case errors.Is(err, registry.ErrNotFound), errors.Is(err, discover.ErrNotFound), errors.Is(err, ground.ErrNotFound),
		errors.Is(err, execution.ErrNotFound), errors.Is(err, artifacts.ErrNotFound), errors.Is(err, policy.ErrNotFound),
		errors.Is(err, runs.ErrNotFound):
		return p(ptNotFound, err.Error())
	case errors.Is(err, ground.ErrNotAdmitted), errors.Is(err, execution.ErrNotGrounded):
		return p(ptNotAdmitted, err.Error()+": only a request the gate admitted executes")
	case errors.Is(err, execution.ErrBadData):
		return p(ptBadData, err.Error())
	case errors.Is(err, execution.ErrOverBudget):
		return p(ptOverBudget, err.Error())
	case errors.Is(err, execution.ErrNotRunnable):
		return p(ptNotRunnable, err.Error()+": the registry holds it, this engine cannot run it")
	case errors.Is(err, execution.ErrBusy):
		st, pr, _ := p(ptBusy, err.Error()+"; retry later")
		return st, pr, false // a full queue is load, not a server failure
	case errors.Is(err, execution.ErrDrift):
		return p(ptDrift, err.Error()+" (F7): discover and ground again")
	case errors.Is(err, runs.ErrRunning):
		return p(ptFuzzRunning, err.Error()+": wait for it to end or cancel it (DELETE), then start again")
	case errors.Is(err, runs.ErrInvalid):
		return p(ptInvalidFuzzRun, err.Error())
	case errors.Is(err, discover.ErrBadQuery):
		return p(ptBadQuery, err.Error())
	case errors.Is(err, hashing.ErrMalformed), errors.Is(err, ground.ErrNoAdvisor):
		return p(ptMalformed, err.Error())
	case errors.Is(err, registry.ErrCorrupt), errors.Is(err, discover.ErrCorrupt), errors.Is(err, ground.ErrCorrupt),
		errors.Is(err, execution.ErrCorrupt), errors.Is(err, artifacts.ErrCorrupt), errors.Is(err, policy.ErrCorrupt),
		errors.Is(err, runs.ErrCorrupt):
		return p(ptCorrupt, "a stored record failed its integrity check; run `groundgate registry verify`")
	case isUpstream(err):
		_, kind, _ := gateway.Kind(err)
		st, pr, _ := p(kind, err.Error())
		return st, pr, false
	case errors.As(err, &he):
		switch he.Code {
		case http.StatusNotFound:
			return p(ptNotFound, "no such path; see GET /openapi.json")
		case http.StatusMethodNotAllowed:
			return p(ptMethod, "this path does not accept that method; see GET /openapi.json")
		case http.StatusRequestEntityTooLarge:
			return p(ptTooLarge, "the request body is too large")
		case http.StatusUnsupportedMediaType:
			return p(ptMediaType, "send JSON with Content-Type: application/json")
		}
		if he.Code >= 400 && he.Code < 500 {
			st, pr, _ := p(ptMalformed, fmt.Sprint(he.Message))
			pr.Status, st = he.Code, he.Code
			return st, pr, false
		}
	}
	return p(ptInternal, "the server failed to handle the request; the cause is in its log")
}

// errorHandler is echo's error handler: every error leaves as
// application/problem+json.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ctx := c.Request().Context()
	status, prob, logCause := problemFor(ctx, err)
	prob.Instance = c.Request().URL.Path
	prob.RequestID = c.Response().Header().Get(echo.HeaderXRequestID)
	switch {
	case status == StatusClientClosedRequest:
		// Not a failure of ours: the access log counts it as 499.
		s.log.LogAttrs(ctx, slog.LevelInfo, "client closed request",
			slog.String("request_id", prob.RequestID), slog.String("path", prob.Instance), slog.Any("error", err))
	case status == http.StatusServiceUnavailable:
		// Load shedding, not a failure: the client was told to retry.
		s.log.LogAttrs(ctx, slog.LevelWarn, "busy",
			slog.String("request_id", prob.RequestID), slog.String("path", prob.Instance), slog.Any("error", err))
	case logCause || status >= 500:
		s.log.LogAttrs(ctx, slog.LevelError, "request failed",
			slog.String("request_id", prob.RequestID), slog.String("path", prob.Instance), slog.Any("error", err))
	}
	writeProblem(c, status, prob)
}

// writeProblem writes prob. For HEAD, net/http drops the body and keeps
// the headers, as RFC 9110 asks.
func writeProblem(c echo.Context, status int, prob Problem) {
	switch status {
	case http.StatusUnauthorized:
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="groundgate"`)
	case http.StatusUnsupportedMediaType:
		// RFC 7694: the only content coding accepted is none.
		c.Response().Header().Set("Accept-Encoding", "identity")
	case http.StatusServiceUnavailable:
		c.Response().Header().Set("Retry-After", retryAfterSeconds)
	}
	b, err := json.Marshal(prob)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(Problem{Type: problemPrefix + ptInternal, Title: kinds[ptInternal].title, Status: status,
			Detail: "the server failed to encode its answer; the cause is in its log"})
	}
	_ = c.Blob(status, "application/problem+json", b)
}

// isUpstream reports whether err is an upstream's failure (gateway.Kind).
func isUpstream(err error) bool {
	_, _, ok := gateway.Kind(err)
	return ok
}
