package pgstore

import "github.com/groundgate/groundgate/errkind"

var (
	// ErrConfig is returned by Open when the configuration is incomplete
	// or the DSN does not parse.
	ErrConfig = errkind.New(errkind.Invalid, "pgstore: configuration")
	// ErrContention is returned by Update (and Batch) when serialisation
	// failures aborted every one of its MaxAttempts runs: other writers
	// keep touching what it reads; later may succeed.
	ErrContention = errkind.New(errkind.Busy, "pgstore: contention")
	// ErrSchema is returned by Open when the database's schema is newer
	// than this build knows (a newer groundgate migrated it): this build
	// cannot serve that database (kind unavailable), a newer one can.
	ErrSchema = errkind.New(errkind.Unavailable, "pgstore: schema")
)
