package storecopy

import "github.com/groundgate/groundgate/errkind"

var (
	// ErrConflict is returned by Check and Copy, before anything is
	// written, when the target holds what the source does not: a key with
	// another value, a key or keyspace the source lacks (a registry with
	// versions the file never had). Two histories are never merged.
	ErrConflict = errkind.New(errkind.Conflict, "storecopy: the target holds another history")
	// ErrNested is returned by Check and Copy when the source has a bucket
	// nested in a bucket: no release writes one, and no engine has a place
	// for it, so the copy refuses rather than drop it.
	ErrNested = errkind.New(errkind.Invalid, "storecopy: nested bucket")
	// ErrMismatch is returned by Verify when the target does not hold
	// what the source holds (keys, bytes, a sequence behind); the report
	// lists every difference.
	ErrMismatch = errkind.New(errkind.Corrupt, "storecopy: the copy differs from the source")
)
