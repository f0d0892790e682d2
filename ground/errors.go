package ground

import "errors"

var (
	// ErrNotFound is returned by Load and Record for an id this server
	// never stored.
	ErrNotFound = errors.New("grounding not found")

	// ErrNotAdmitted is returned by Load for a stored decision that
	// refused its request: only admitted requests execute.
	ErrNotAdmitted = errors.New("grounding was not admitted")

	// ErrCorrupt is returned when a stored record no longer hashes to its
	// id.
	ErrCorrupt = errors.New("grounding record corrupt")
)
