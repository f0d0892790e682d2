package gateway

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/groundgate/groundgate/errkind"
)

// Sentinel errors. Callers match them with errors.Is; the REST layer maps
// each to one problem type and status (given here) in one place. Every
// error a call returns wraps exactly one of the call kinds below, or is
// the caller's own context error.
var (
	// ErrInvalidConfig is returned by DecodeConfig and Config.Validate for
	// an upstream configuration that does not decode or is not valid: an
	// unknown field, a bad name, an empty argv, a URL that is not http or
	// https, a value over its bound. REST: 400.
	ErrInvalidConfig = errkind.Coded(errkind.Invalid, "invalid-upstream", "invalid upstream configuration")

	// ErrUnavailable is returned by Call when the upstream cannot take the
	// call: it is not connected (never was, or its session ended and the
	// gateway is reconnecting), or the connection ended during the call
	// (a crashed process, a closed stream). REST: 502.
	ErrUnavailable = errkind.Coded(errkind.Unavailable, "upstream-unavailable", "upstream unavailable")

	// ErrTimeout is returned by Call when the upstream did not answer
	// within the per-call time limit (Limits.CallTimeout). The upstream is
	// told the call is cancelled. REST: 504.
	ErrTimeout = errkind.Coded(errkind.Unavailable, "upstream-timeout", "upstream timed out")

	// ErrResultTooLarge is returned by Call when the result, in RFC 8785
	// form, is larger than Limits.MaxResultBytes, or when the upstream sent
	// a message larger than Limits.MaxMessageBytes while the call waited
	// for its answer (the message is refused unread). REST: 502.
	ErrResultTooLarge = errkind.Coded(errkind.TooLarge, "upstream-result-too-large", "upstream result too large")

	// ErrProtocol is returned when the upstream answers with something
	// that is not the MCP it promised: malformed JSON or JSON-RPC, a
	// duplicate key, a result that is not a CallToolResult, a tool list
	// that does not decode or repeats its cursor. Call returns it for the
	// call's answer; the connection loop records it as the last error and
	// reconnects when the stream itself is garbage. REST: 502.
	ErrProtocol = errkind.Coded(errkind.Unavailable, "upstream-protocol-error", "upstream protocol error")

	// ErrCallRejected is returned by Call when the upstream answered the
	// call with a JSON-RPC error (an unknown tool, invalid params, an
	// internal error) rather than a CallToolResult. It is wrapped in an
	// *RPCError holding the code and the upstream's message (untrusted
	// text). A tool's own failure is a result with isError, not this.
	// REST: 502.
	ErrCallRejected = errkind.Coded(errkind.Unavailable, "upstream-rejected", "upstream rejected the call")

	// ErrBusy is returned by Call when the upstream already has
	// Limits.MaxConcurrent calls in flight and no slot freed within
	// Limits.QueueWait. Nothing was sent upstream. REST: 503.
	ErrBusy = errkind.Coded(errkind.Busy, "upstream-busy", "upstream busy")

	// ErrToolList is returned (and recorded as the last error) when the
	// upstream's tool list is over the limits: more than Limits.MaxTools
	// tools or Limits.MaxToolListBytes bytes over all pages. The session
	// is dropped and retried with backoff. REST (sync): 502.
	ErrToolList = errkind.Coded(errkind.TooLarge, "upstream-tool-list-refused", "upstream tool list refused")

	// ErrInvalidTool is returned by ToolEntry for a live tool that cannot
	// become a registry entry (see LiveTool.Problem): a name the registry
	// cannot hold, a missing or malformed schema. REST (sync): reported per
	// tool in the plan.
	ErrInvalidTool = errkind.New(errkind.Invalid, "tool cannot become an entry")

	// ErrClosed is returned by Call and Refresh after Close.
	ErrClosed = errkind.Coded(errkind.Unavailable, "upstream-unavailable", "upstream closed")
)

// RPCError is the JSON-RPC error an upstream answered a call with. It
// wraps ErrCallRejected.
type RPCError struct {
	Code int64
	// Message is the upstream's text: untrusted, shown to an admin at
	// most, never to an agent as if it were groundgate's.
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("%v: JSON-RPC error %d: %s", ErrCallRejected, e.Code, clip(e.Message, 200))
}

// Unwrap makes errors.Is(err, ErrCallRejected) true.
func (e *RPCError) Unwrap() error { return ErrCallRejected }

// clip shortens untrusted or long text quoted in an error to about n
// bytes, cutting between characters.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Kind is the problem type and HTTP status an upstream's failure is
// answered with (SPEC §14: 502 or 504, never a 500; 503 when the
// upstream is busy), recorded in call footprints: the type is the code of
// the sentinel the error wraps (the server answers by the same code), the
// first of them in this order. ok is false for errors that are not an
// upstream's.
func Kind(err error) (status int, kind string, ok bool) {
	for _, s := range []struct {
		err    error
		status int
	}{
		{ErrTimeout, 504}, {ErrBusy, 503}, {ErrResultTooLarge, 502}, {ErrProtocol, 502},
		{ErrCallRejected, 502}, {ErrToolList, 502}, {ErrUnavailable, 502}, {ErrClosed, 502},
	} {
		if errors.Is(err, s.err) {
			return s.status, errkind.CodeOf(s.err), true
		}
	}
	return 0, "", false
}

// ErrInvalidSchema is returned by CompileSchema for a schema that is not
// one JSON object, does not compile as JSON Schema 2020-12, refers outside
// itself, uses a dynamic reference, or has a reference cycle that does not
// descend into the instance. A sync refuses such a tool. REST: 422.
var ErrInvalidSchema = errkind.New(errkind.Invalid, "invalid tool schema")

// ErrNoUpstream is returned for a name no upstream is configured under.
// REST: 404.
var ErrNoUpstream = errkind.New(errkind.NotFound, "no such upstream")

// ErrInvalidOverlay refuses an overlay that names a tool the upstream does
// not list, or whose contract or words are not valid. REST: 422.
var ErrInvalidOverlay = errkind.Coded(errkind.Invalid, "invalid-overlay", "invalid sync overlay")
