package session

import "github.com/groundgate/groundgate/errkind"

// Sentinel errors. Callers match them with errors.Is; the REST layer maps
// each to one problem type and status (given here) in one place. Every
// error the store returns wraps one of them, or is a bbolt or context
// error of its own.
var (
	// ErrNotFound is returned by Get, AddTurn, AppendCall, Close and State
	// for an id no session has. REST: 404.
	ErrNotFound = errkind.New(errkind.NotFound, "no such session")

	// ErrClosed is returned by AddTurn and AppendCall on a session that
	// Close has closed: its record stays readable, it takes nothing more.
	// REST: 409.
	ErrClosed = errkind.Coded(errkind.Conflict, "session-closed", "session closed")

	// ErrUnauthorized is returned by Authorize when the token is not the
	// session's own, and also when no session has the id: a token holder
	// learns nothing about other sessions, not even that they exist.
	// REST: 401 (403 for a valid token of another session is a choice the
	// REST layer may make; the store does not tell the two apart).
	ErrUnauthorized = errkind.New(errkind.Unauthorized, "not this session's token")

	// ErrTooLarge is returned when a result would grow the trusted state
	// past Limits.MaxResults results or Limits.MaxBytes bytes of canonical
	// JSON, or a prompt is longer than Limits.MaxPromptBytes. From
	// AppendCall it comes with the call recorded and the state unchanged.
	// REST: 413 for a prompt; for a call, the answer the call already has,
	// with the refusal to record it in the footprint's session record.
	ErrTooLarge = errkind.New(errkind.TooLarge, "session state too large")

	// ErrInvalid is returned for an argument the store cannot take: an
	// empty prompt, a zero evidence id or call hash, an unknown decision,
	// an observation whose arguments are not a JSON object or whose value
	// is not JSON. REST: 400.
	ErrInvalid = errkind.New(errkind.Invalid, "invalid session input")

	// ErrCorrupt is returned when a stored record fails its check on read:
	// a session id that is not the digest of its genesis, a state whose
	// bytes do not hash to the digest its session records, a record that
	// is not its own canonical form. REST: 500 (corrupt-record).
	ErrCorrupt = errkind.New(errkind.Corrupt, "session record corrupt")
)
