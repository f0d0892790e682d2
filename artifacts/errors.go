package artifacts

import "github.com/groundgate/groundgate/errkind"

// Sentinel errors, returned wrapped with the digest concerned. Callers match
// them with errors.Is; the HTTP layer maps them to problem types.
var (
	// ErrNotFound is returned by Get for a digest the store holds no blob
	// under (including any digest that is not a blake3: digest, since no
	// blob can be stored under one).
	ErrNotFound = errkind.New(errkind.NotFound, "artifact not found")

	// ErrCorrupt is returned by Get when the stored bytes no longer hash to
	// their key; the bytes are never returned. Verify wraps it when it
	// found at least one such blob.
	ErrCorrupt = errkind.New(errkind.Corrupt, "artifact corrupt")
)
