package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/ground"
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
	// A shared store (SPEC §17).
	ptWriteConflict = "write-conflict"
)

// retryAfterSeconds is what a busy executor asks a client to wait: about
// one typical execution.
const retryAfterSeconds = "5"

// StatusClientClosedRequest is nginx's non-standard 499: the client went
// away before the answer was ready. Nobody receives it; it keeps client
// cancellations apart from server failures in logs and metrics.
const StatusClientClosedRequest = 499

// problemTypes gives every problem type its one status and title, and the
// kind a client reads it back as: handlers pick a type, never a status
// code. detail, when set, replaces the error's
// text (it says what to do, and the text would say nothing a client can
// use); hint is appended to it. quiet marks the 5xx that are load or an
// upstream's failure, not ours: their cause is not logged as an error.
var problemTypes = map[string]struct {
	kind         errkind.Kind // the kind a client reads the problem back as
	status       int
	title        string
	detail, hint string
	quiet        bool
}{
	ptMalformed:       {kind: errkind.Invalid, status: http.StatusBadRequest, title: "Malformed request"},
	ptBadQuery:        {kind: errkind.Invalid, status: http.StatusBadRequest, title: "Bad discovery query"},
	ptInvalidEntry:    {kind: errkind.Invalid, status: http.StatusUnprocessableEntity, title: "Invalid capability entry"},
	ptNotGrounded:     {kind: errkind.Refused, status: http.StatusUnprocessableEntity, title: "Request not grounded"},
	ptNotFound:        {kind: errkind.NotFound, status: http.StatusNotFound, title: "Not found"},
	ptDuplicate:       {kind: errkind.Conflict, status: http.StatusConflict, title: "Duplicate capability identity"},
	ptUnauthorized:    {kind: errkind.Unauthorized, status: http.StatusUnauthorized, title: "Unauthorized", detail: "this session needs Authorization: Bearer <its token> (or the admin token)"},
	ptWritesOff:       {kind: errkind.Unauthorized, status: http.StatusForbidden, title: "Registry writes are disabled"},
	ptTooLarge:        {kind: errkind.TooLarge, status: http.StatusRequestEntityTooLarge, title: "Request body too large"},
	ptHeaderTooLarge:  {kind: errkind.TooLarge, status: http.StatusRequestHeaderFieldsTooLarge, title: "Request header fields too large"},
	ptMediaType:       {kind: errkind.Invalid, status: http.StatusUnsupportedMediaType, title: "Unsupported media type"},
	ptMethod:          {kind: errkind.Invalid, status: http.StatusMethodNotAllowed, title: "Method not allowed"},
	ptCorrupt:         {kind: errkind.Corrupt, status: http.StatusInternalServerError, title: "Stored record is corrupt", detail: "a stored record failed its integrity check; run `groundgate registry verify`"},
	ptInternal:        {kind: errkind.Unknown, status: http.StatusInternalServerError, title: "Internal server error", detail: "the server failed to handle the request; the cause is in its log"},
	ptNotAdmitted:     {kind: errkind.Refused, status: http.StatusUnprocessableEntity, title: "Grounding was not admitted", hint: ": only a request the gate admitted executes"},
	ptBadData:         {kind: errkind.Invalid, status: http.StatusUnprocessableEntity, title: "Bad source data"},
	ptDrift:           {kind: errkind.Conflict, status: http.StatusConflict, title: "Registry drift", hint: " (F7): discover and ground again"},
	ptOverBudget:      {kind: errkind.TooLarge, status: http.StatusUnprocessableEntity, title: "Execution over budget"},
	ptNotRunnable:     {kind: errkind.Invalid, status: http.StatusUnprocessableEntity, title: "Capability not runnable", hint: ": the registry holds it, this engine cannot run it"},
	ptBusy:            {kind: errkind.Busy, status: http.StatusServiceUnavailable, title: "Executor busy", hint: "; retry later", quiet: true},
	ptInvalidPolicy:   {kind: errkind.Invalid, status: http.StatusUnprocessableEntity, title: "Invalid policy"},
	ptPolicyRefused:   {kind: errkind.Refused, status: http.StatusUnprocessableEntity, title: "Refused by the policies in force"},
	ptNoSolver:        {kind: errkind.Unavailable, status: http.StatusServiceUnavailable, title: "Policy solver unavailable", hint: "; the request was not admitted, retry later"},
	ptDataChanged:     {kind: errkind.Conflict, status: http.StatusConflict, title: "Data changed since grounding"},
	ptClientClosed:    {kind: errkind.Unknown, status: StatusClientClosedRequest, title: "Client closed request"},
	ptFuzzRunning:     {kind: errkind.Conflict, status: http.StatusConflict, title: "A fuzz run is in progress", hint: ": wait for it to end or cancel it (DELETE), then start again"},
	ptInvalidFuzzRun:  {kind: errkind.Invalid, status: http.StatusUnprocessableEntity, title: "Invalid fuzz run"},
	ptNotReady:        {kind: errkind.Unavailable, status: http.StatusServiceUnavailable, title: "Not ready"},
	ptInvalidUpstream: {kind: errkind.Invalid, status: http.StatusBadRequest, title: "Invalid upstream configuration"},
	ptInvalidOverlay:  {kind: errkind.Invalid, status: http.StatusUnprocessableEntity, title: "Invalid sync overlay"},
	ptNotReplayable:   {kind: errkind.Conflict, status: http.StatusConflict, title: "Call not replayable"},
	ptCallRefused:     {kind: errkind.Refused, status: http.StatusUnprocessableEntity, title: "Call not admitted"},
	ptResultRefused:   {kind: errkind.Refused, status: http.StatusUnprocessableEntity, title: "Call result refused"},
	ptSessionClosed:   {kind: errkind.Conflict, status: http.StatusConflict, title: "Session closed", hint: ": open a new session"},
	ptWriteConflict:   {kind: errkind.Conflict, status: http.StatusConflict, title: "Write conflict", detail: "another server sharing the store wrote first; send the request again: it applies on what won"},
	// An upstream's failures: the gateway's sentinels carry these codes
	// (gateway.Kind records the same in call footprints).
	"upstream-timeout":           {kind: errkind.Unavailable, status: http.StatusGatewayTimeout, title: "Upstream timed out", quiet: true},
	"upstream-busy":              {kind: errkind.Busy, status: http.StatusServiceUnavailable, title: "Upstream busy", quiet: true},
	"upstream-result-too-large":  {kind: errkind.TooLarge, status: http.StatusBadGateway, title: "Upstream result too large", quiet: true},
	"upstream-protocol-error":    {kind: errkind.Unavailable, status: http.StatusBadGateway, title: "Upstream protocol error", quiet: true},
	"upstream-rejected":          {kind: errkind.Unavailable, status: http.StatusBadGateway, title: "Upstream rejected the call", quiet: true},
	"upstream-tool-list-refused": {kind: errkind.TooLarge, status: http.StatusBadGateway, title: "Upstream tool list refused", quiet: true},
	"upstream-unavailable":       {kind: errkind.Unavailable, status: http.StatusBadGateway, title: "Upstream unavailable", quiet: true},
}

// kindProblems is the problem type of an error whose sentinel names no code
// (errkind.Coded) of its own: one per kind. Conflict and Refused have none:
// what a client does about them depends on which conflict or refusal, so
// their sentinels carry a code; one without (not meant to reach a client)
// is answered like an unclassified error.
var kindProblems = map[errkind.Kind]string{
	errkind.NotFound:     ptNotFound,
	errkind.Corrupt:      ptCorrupt,
	errkind.Invalid:      ptMalformed,
	errkind.Busy:         ptBusy,
	errkind.Unavailable:  ptNotReady,
	errkind.Unauthorized: ptUnauthorized,
	errkind.TooLarge:     ptTooLarge,
}

// KindOfProblem is the error kind of a problem type (a full
// urn:groundgate:problem: URI or its last segment): what a client of the
// API (the CLI) classifies an answer by. Unknown for a type it does not
// know.
func KindOfProblem(typ string) errkind.Kind {
	return problemTypes[strings.TrimPrefix(typ, problemPrefix)].kind
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
//
// The typed errors that carry more than a message (fields, failures, a
// record) are read first; every other error is answered by its kind
// (errkind): the code its sentinel names, else the kind's problem type.
// Errors without a kind become a generic 500; their text is logged, never
// sent.
func problemFor(ctx context.Context, err error) (int, Problem, bool) {
	var (
		ae  *apiError
		pe  problemError
		sce *sessionCallError
		he  *echo.HTTPError
		ve  *registry.ValidationError
		pve *policy.ValidationError
		pre *ground.PolicyError
		de  *registry.DuplicateError
		mbe *http.MaxBytesError
		cre *calls.Refusal
		cue *calls.UpstreamError
	)
	switch {
	case errors.As(err, &sce):
		st, pr, logIt := problemFor(ctx, sce.err)
		rec := sce.record
		pr.Session = &rec
		return st, pr, logIt
	case errors.As(err, &pe):
		return pe.p.Status, pe.p, false
	case errors.As(err, &ae):
		st, pr, logIt := problemOf(ae.kind, ae.detail)
		if ae.extra != nil {
			ae.extra(&pr)
		}
		return st, pr, logIt
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return problemOf(ptClientClosed, "the client closed the request before the answer was ready")
	case errors.As(err, &cre):
		kind := ptCallRefused
		if cre.Call != nil {
			kind = ptResultRefused
		}
		st, pr, _ := problemOf(kind, refusalDetail(cre.Failures))
		pr.Failures, pr.Call = cre.Failures, cre.Call
		return st, pr, false
	case errors.As(err, &cue):
		st, pr, _ := problemOf(cue.Call.Error.Type, cue.Err.Error())
		pr.Call = cue.Call
		return st, pr, false
	case errors.As(err, &mbe):
		return problemOf(ptTooLarge, fmt.Sprintf("the body is larger than %d bytes", mbe.Limit))
	case errors.As(err, &ve):
		st, pr, _ := problemOf(ptInvalidEntry, ve.Error())
		pr.Errors = ve.Fields
		return st, pr, false
	case errors.As(err, &pve):
		st, pr, _ := problemOf(ptInvalidPolicy, pve.Error())
		pr.Errors = pve.Fields
		return st, pr, false
	case errors.As(err, &pre):
		st, pr, _ := problemOf(ptPolicyRefused, pre.Error()+": "+refusalDetail(pre.Failures))
		pr.Failures = pre.Failures
		return st, pr, false
	case errors.As(err, &de):
		st, pr, _ := problemOf(ptDuplicate, de.Error())
		pr.Existing = de.Existing
		return st, pr, false
	}
	if typ := problemTypeOf(err); typ != "" {
		t := problemTypes[typ]
		detail := t.detail
		if detail == "" {
			detail = err.Error() + t.hint
		}
		return problemOf(typ, detail)
	}
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return problemOf(ptNotFound, "no such path; see GET /openapi.json")
		case http.StatusMethodNotAllowed:
			return problemOf(ptMethod, "this path does not accept that method; see GET /openapi.json")
		case http.StatusRequestEntityTooLarge:
			return problemOf(ptTooLarge, "the request body is too large")
		case http.StatusUnsupportedMediaType:
			return problemOf(ptMediaType, "send JSON with Content-Type: application/json")
		}
		if he.Code >= 400 && he.Code < 500 {
			st, pr, _ := problemOf(ptMalformed, fmt.Sprint(he.Message))
			pr.Status, st = he.Code, he.Code
			return st, pr, false
		}
	}
	return problemOf(ptInternal, problemTypes[ptInternal].detail)
}

// problemTypeOf is the problem type of an error by its kind: the code its
// sentinel names (errkind.Coded), else its kind's type; "" for an error
// without a kind, or of a kind with no type of its own and no code.
func problemTypeOf(err error) string {
	k := errkind.Of(err)
	if k == errkind.Unknown {
		return ""
	}
	if code := errkind.CodeOf(err); code != "" {
		if _, ok := problemTypes[code]; ok {
			return code
		}
	}
	return kindProblems[k]
}

// problemOf is the problem of a type with its status and title, and
// whether its cause is logged: a 5xx that is not load or an upstream's.
func problemOf(typ, detail string) (int, Problem, bool) {
	t := problemTypes[typ]
	return t.status, Problem{Type: problemPrefix + typ, Title: t.title, Status: t.status, Detail: detail}, t.status >= 500 && !t.quiet
}

// InvalidParams reports whether MCP answers the problem as a JSON-RPC
// invalid-params error (-32602) instead of a tool error carrying it: the
// caller's arguments are not the documented shape (REST's 400) or are over
// the body limit (413). Everything else is a decision, a state or a
// failure a model reads in a tool result (docs/mcp.md).
func (p Problem) InvalidParams() bool {
	return p.Status == http.StatusBadRequest || p.Status == http.StatusRequestEntityTooLarge
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
		b, _ = json.Marshal(Problem{Type: problemPrefix + ptInternal, Title: problemTypes[ptInternal].title, Status: status,
			Detail: "the server failed to encode its answer; the cause is in its log"})
	}
	_ = c.Blob(status, "application/problem+json", b)
}
