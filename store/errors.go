package store

import "github.com/groundgate/groundgate/errkind"

// The store's errors. Every engine returns these (wrapped with context),
// so that a domain package tests one set whatever engine runs.
var (
	// ErrNotFound is returned when no record, version, entry, value or blob
	// is stored under the key asked for.
	ErrNotFound = errkind.New(errkind.NotFound, "store: not found")
	// ErrCorrupt is returned when stored bytes fail their check: a record
	// or blob that does not hash to its key, a key that is not a digest.
	ErrCorrupt = errkind.New(errkind.Corrupt, "store: corrupt")
	// ErrConflict is returned when a version or log entry is written at a
	// position that is taken or not next: on a shared store, another
	// replica wrote first. Its code names the problem a client gets
	// (409 write-conflict): the same request, sent again, applies on what
	// won.
	ErrConflict = errkind.Coded(errkind.Conflict, "write-conflict", "store: conflict")
	// ErrReadOnly is returned when a read-only transaction, or a store
	// opened read-only (a file opened by `registry verify`, a PostgreSQL
	// standby), is asked to write: the store cannot take writes now, which
	// is no fault of the request (kind unavailable).
	ErrReadOnly = errkind.New(errkind.Unavailable, "store: read-only")
	// ErrClosed is returned when a closed store is used.
	ErrClosed = errkind.New(errkind.Unavailable, "store: closed")
)
