package registry

import "github.com/groundgate/groundgate/errkind"

// Sentinel errors. Callers match them with errors.Is; the HTTP layer maps
// them to problem types in one place.
var (
	// ErrInvalidEntry is returned (wrapped in a *ValidationError) when an
	// entry or catalog document fails validation.
	ErrInvalidEntry = errkind.Coded(errkind.Invalid, "invalid-entry", "invalid entry")

	// ErrNotFound is returned when a name or version does not exist.
	ErrNotFound = errkind.New(errkind.NotFound, "not found")

	// ErrDuplicateIdentity is returned when an entry's identity equals that
	// of an entry stored under another name (wrapped in *DuplicateError).
	ErrDuplicateIdentity = errkind.Coded(errkind.Conflict, "duplicate-identity", "duplicate identity")

	// ErrCorrupt is returned when stored bytes no longer hash to their key
	// or a version's recorded registry hash does not match its entries.
	ErrCorrupt = errkind.New(errkind.Corrupt, "registry corrupt")

	// ErrClosed is returned by operations on a closed store.
	ErrClosed = errkind.New(errkind.Unavailable, "registry closed")
)

// ErrStalePatch is returned when a patch names a capability that no
// longer has the identity the patch was made for.
var ErrStalePatch = errkind.New(errkind.Conflict, "stale patch")
