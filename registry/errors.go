package registry

import "errors"

// Sentinel errors. Callers match them with errors.Is; the HTTP layer maps
// them to problem types in one place.
var (
	// ErrInvalidEntry is returned (wrapped in a *ValidationError) when an
	// entry or catalog document fails validation.
	ErrInvalidEntry = errors.New("invalid entry")

	// ErrNotFound is returned when a name or version does not exist.
	ErrNotFound = errors.New("not found")

	// ErrDuplicateIdentity is returned when an entry's identity equals that
	// of an entry stored under another name (wrapped in *DuplicateError).
	ErrDuplicateIdentity = errors.New("duplicate identity")

	// ErrCorrupt is returned when stored bytes no longer hash to their key
	// or a version's recorded registry hash does not match its entries.
	ErrCorrupt = errors.New("registry corrupt")

	// ErrClosed is returned by operations on a closed store.
	ErrClosed = errors.New("registry closed")
)
