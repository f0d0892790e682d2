// Package errkind is groundgate's one error vocabulary: a handful of kinds
// that every package's sentinel errors belong to, so that one classifier at
// each edge (HTTP problems, MCP errors, CLI exit codes, fuzz tallies) maps a
// kind, not a list of every package's sentinels.
//
// A package declares its sentinels with New, in one file, each with a
// comment saying when it is returned:
//
//	// ErrNotFound is returned when no entry has the identity asked for.
//	var ErrNotFound = errkind.New(errkind.NotFound, "registry: not found")
//
// and callers test either the sentinel (errors.Is(err, registry.ErrNotFound))
// or the kind (errors.Is(err, errkind.NotFound), or Of(err) == errkind.NotFound).
//
// Where the kind alone is too coarse for a client (a registry drift is a
// conflict the client answers by discovering again, not by retrying), the
// sentinel also carries a code, declared with Coded: a stable name the edges
// answer with instead of the kind's (the HTTP problem type, the MCP tool
// error). CodeOf reads it.
package errkind

import "errors"

// Kind is what went wrong, as a caller decides what to do about it. A Kind
// is itself an error so that errors.Is(err, errkind.NotFound) reads naturally.
type Kind uint8

// The kinds. Unknown is the zero value: an error nobody classified, which an
// edge treats as its own failure (HTTP 500), never as the client's.
const (
	Unknown      Kind = iota
	NotFound          // the thing asked for does not exist (or not any more)
	Corrupt           // a stored record failed its integrity check
	Invalid           // the request or input is malformed or breaks a rule of its format
	Conflict          // the request contradicts the current state (duplicate, closed, running)
	Busy              // load: a queue or pool is full; retrying later may succeed
	Unavailable       // a dependency (solver, upstream, store) cannot serve now
	Refused           // a gate, contract or policy decided against the request
	Unauthorized      // the credentials are missing or do not reach this object
	TooLarge          // the request or a result exceeds a documented bound
)

var names = [...]string{
	Unknown:      "unknown",
	NotFound:     "not found",
	Corrupt:      "corrupt",
	Invalid:      "invalid",
	Conflict:     "conflict",
	Busy:         "busy",
	Unavailable:  "unavailable",
	Refused:      "refused",
	Unauthorized: "unauthorized",
	TooLarge:     "too large",
}

// Kinds lists every kind but Unknown, in order.
func Kinds() []Kind {
	return []Kind{NotFound, Corrupt, Invalid, Conflict, Busy, Unavailable, Refused, Unauthorized, TooLarge}
}

// String is the kind's name, as in names above.
func (k Kind) String() string {
	if int(k) < len(names) {
		return names[k]
	}
	return "unknown"
}

// Error makes a Kind usable as an errors.Is target.
func (k Kind) Error() string { return k.String() }

// kinded is what Of looks for in an error tree.
type kinded interface {
	error
	Kind() Kind
}

// Of returns the kind of the first error in err's tree that has one, and
// Unknown when none has (including for nil).
func Of(err error) Kind {
	var k kinded
	if errors.As(err, &k) {
		return k.Kind()
	}
	return Unknown
}

// New returns a sentinel error of kind k whose text is msg. Two calls with
// the same arguments give two distinct sentinels, like errors.New.
func New(k Kind, msg string) error { return &sentinel{kind: k, msg: msg} }

// Coded is New for a sentinel that names its own code: a stable,
// lower-case, hyphenated name (the problem type it is answered with, such
// as "registry-drift"), more specific than its kind.
func Coded(k Kind, code, msg string) error { return &sentinel{kind: k, code: code, msg: msg} }

// CodeOf returns the code of the error Of reads its kind from: "" when that
// error has none, or when no error in err's tree has a kind. The code and
// the kind always come from the same error, so they never contradict.
func CodeOf(err error) string {
	var k kinded
	if errors.As(err, &k) {
		if c, ok := k.(interface{ Code() string }); ok {
			return c.Code()
		}
	}
	return ""
}

// Wrap returns an error of kind k that wraps err, for an error from outside
// the project (a driver's, the operating system's) that a package classifies
// where it receives it. Wrap(k, nil) is nil.
func Wrap(k Kind, err error) error {
	if err == nil {
		return nil
	}
	return &wrapped{kind: k, err: err}
}

type sentinel struct {
	kind Kind
	code string
	msg  string
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Kind() Kind    { return e.kind }
func (e *sentinel) Code() string  { return e.code }

// Is makes errors.Is(err, kind) true for a sentinel of that kind.
func (e *sentinel) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.kind
}

type wrapped struct {
	kind Kind
	err  error
}

func (e *wrapped) Error() string { return e.err.Error() }
func (e *wrapped) Kind() Kind    { return e.kind }
func (e *wrapped) Unwrap() error { return e.err }
func (e *wrapped) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.kind
}
