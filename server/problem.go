package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
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
	Grounding *groundingBody   `json:"grounding,omitempty"`
	// Entry validation.
	Errors []registry.FieldError `json:"errors,omitempty"`
	// Duplicate identities.
	Existing string `json:"existing,omitempty"`
}

const problemPrefix = "urn:groundgate:problem:"

// Problem types. Each is stable: clients may switch on them.
const (
	ptMalformed    = "malformed-request"
	ptBadQuery     = "bad-query"
	ptInvalidEntry = "invalid-entry"
	ptNotGrounded  = "not-grounded"
	ptNotFound     = "not-found"
	ptDuplicate    = "duplicate-identity"
	ptUnauthorized = "unauthorized"
	ptWritesOff    = "writes-disabled"
	ptTooLarge     = "body-too-large"
	ptMediaType    = "unsupported-media-type"
	ptMethod       = "method-not-allowed"
	ptCorrupt      = "corrupt-record"
	ptInternal     = "internal"
	ptNotAdmitted  = "not-admitted"
	ptBadData      = "bad-data"
	ptDrift        = "registry-drift"
)

var titles = map[string]string{
	ptMalformed:    "Malformed request",
	ptBadQuery:     "Bad discovery query",
	ptInvalidEntry: "Invalid capability entry",
	ptNotGrounded:  "Request not grounded",
	ptNotFound:     "Not found",
	ptDuplicate:    "Duplicate capability identity",
	ptUnauthorized: "Unauthorized",
	ptWritesOff:    "Registry writes are disabled",
	ptTooLarge:     "Request body too large",
	ptMediaType:    "Unsupported media type",
	ptMethod:       "Method not allowed",
	ptCorrupt:      "Stored record is corrupt",
	ptInternal:     "Internal server error",
	ptNotAdmitted:  "Grounding was not admitted",
	ptBadData:      "Bad source data",
	ptDrift:        "Registry drift",
}

// apiError is an error a handler returns with its problem already chosen.
type apiError struct {
	status int
	kind   string
	detail string
	extra  func(*Problem)
}

func (e *apiError) Error() string { return e.kind + ": " + e.detail }

// problemError carries a problem built elsewhere (GroundingResponse) to the
// error handler, which adds instance and request id like for any other.
type problemError struct{ p Problem }

func (e problemError) Error() string { return e.p.Type + ": " + e.p.Detail }

func newError(status int, kind, format string, args ...any) *apiError {
	return &apiError{status: status, kind: kind, detail: fmt.Sprintf(format, args...)}
}

// problemFor maps any error to a status and problem, in one place. Errors
// it does not recognise become a generic 500; their text is logged, never
// sent.
func problemFor(err error) (int, Problem, bool) {
	var (
		ae  *apiError
		he  *echo.HTTPError
		ve  *registry.ValidationError
		de  *registry.DuplicateError
		mbe *http.MaxBytesError
	)
	p := func(status int, kind, detail string) (int, Problem, bool) {
		return status, Problem{Type: problemPrefix + kind, Title: titles[kind], Status: status, Detail: detail}, false
	}
	var pe problemError
	switch {
	case errors.As(err, &pe):
		return pe.p.Status, pe.p, false
	case errors.As(err, &ae):
		st, pr, _ := p(ae.status, ae.kind, ae.detail)
		if ae.extra != nil {
			ae.extra(&pr)
		}
		return st, pr, false
	case errors.As(err, &mbe):
		return p(http.StatusRequestEntityTooLarge, ptTooLarge, fmt.Sprintf("the body is larger than %d bytes", mbe.Limit))
	case errors.As(err, &ve):
		st, pr, _ := p(http.StatusUnprocessableEntity, ptInvalidEntry, ve.Error())
		pr.Errors = ve.Fields
		return st, pr, false
	case errors.As(err, &de):
		st, pr, _ := p(http.StatusConflict, ptDuplicate, de.Error())
		pr.Existing = de.Existing
		return st, pr, false
	case errors.Is(err, registry.ErrInvalidEntry):
		return p(http.StatusUnprocessableEntity, ptInvalidEntry, err.Error())
	case errors.Is(err, registry.ErrNotFound), errors.Is(err, discover.ErrNotFound), errors.Is(err, ground.ErrNotFound),
		errors.Is(err, execution.ErrNotFound), errors.Is(err, artifacts.ErrNotFound):
		return p(http.StatusNotFound, ptNotFound, err.Error())
	case errors.Is(err, ground.ErrNotAdmitted), errors.Is(err, execution.ErrNotGrounded):
		return p(http.StatusUnprocessableEntity, ptNotAdmitted, err.Error()+": only a request the gate admitted executes")
	case errors.Is(err, execution.ErrBadData):
		return p(http.StatusUnprocessableEntity, ptBadData, err.Error())
	case errors.Is(err, execution.ErrDrift):
		return p(http.StatusConflict, ptDrift, err.Error()+" (F7): discover and ground again")
	case errors.Is(err, discover.ErrBadQuery):
		return p(http.StatusBadRequest, ptBadQuery, err.Error())
	case errors.Is(err, hashing.ErrMalformed):
		return p(http.StatusBadRequest, ptMalformed, err.Error())
	case errors.Is(err, registry.ErrCorrupt), errors.Is(err, discover.ErrCorrupt), errors.Is(err, ground.ErrCorrupt),
		errors.Is(err, execution.ErrCorrupt), errors.Is(err, artifacts.ErrCorrupt):
		st, pr, _ := p(http.StatusInternalServerError, ptCorrupt, "a stored record failed its integrity check; run `groundgate registry verify`")
		return st, pr, true
	case errors.As(err, &he):
		switch he.Code {
		case http.StatusNotFound:
			return p(he.Code, ptNotFound, "no such path; see GET /openapi.json")
		case http.StatusMethodNotAllowed:
			return p(he.Code, ptMethod, "this path does not accept that method; see GET /openapi.json")
		case http.StatusRequestEntityTooLarge:
			return p(he.Code, ptTooLarge, "the request body is too large")
		case http.StatusUnsupportedMediaType:
			return p(he.Code, ptMediaType, "send JSON with Content-Type: application/json")
		}
		if he.Code >= 400 && he.Code < 500 {
			return p(he.Code, ptMalformed, fmt.Sprint(he.Message))
		}
	}
	st, pr, _ := p(http.StatusInternalServerError, ptInternal, "the server failed to handle the request; the cause is in its log")
	return st, pr, true
}

// errorHandler is echo's error handler: every error leaves as
// application/problem+json.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, prob, logCause := problemFor(err)
	prob.Instance = c.Request().URL.Path
	prob.RequestID = c.Response().Header().Get(echo.HeaderXRequestID)
	if logCause || status >= 500 {
		s.log.LogAttrs(c.Request().Context(), slog.LevelError, "request failed",
			slog.String("request_id", prob.RequestID), slog.String("path", prob.Instance), slog.Any("error", err))
	}
	writeProblem(c, status, prob)
}

func writeProblem(c echo.Context, status int, prob Problem) {
	if status == http.StatusUnauthorized {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="groundgate"`)
	}
	b, err := json.Marshal(prob)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(Problem{Type: problemPrefix + ptInternal, Title: titles[ptInternal], Status: status,
			Detail: "the server failed to encode its answer; the cause is in its log"})
	}
	if c.Request().Method == http.MethodHead {
		c.Response().WriteHeader(status)
		return
	}
	_ = c.Blob(status, "application/problem+json", b)
}
