package calls

import "github.com/groundgate/groundgate/errkind"

// ErrNotReplayable refuses to replay a write. REST: 409.
var ErrNotReplayable = errkind.Coded(errkind.Conflict, "not-replayable", "not replayable")

// ErrNoSigner is Attest's error on a Service without a signer. REST: 404.
var ErrNoSigner = errkind.New(errkind.NotFound, "this server signs no attestations")

// Errors of the store.
var (
	// ErrNotFound is returned for a call hash no footprint is stored
	// under. REST: 404.
	ErrNotFound = errkind.New(errkind.NotFound, "no such call")
	// ErrCorrupt is returned when a stored footprint's bytes no longer
	// hash to its key. REST: 500 (corrupt-record).
	ErrCorrupt = errkind.New(errkind.Corrupt, "call record corrupt")
)
