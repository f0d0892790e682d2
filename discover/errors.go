package discover

import "github.com/groundgate/groundgate/errkind"

// Sentinel errors. Callers match them with errors.Is; every error returned
// by this package that has one of these causes wraps it with %w.
var (
	// ErrNotFound is returned by Lookup when no evidence record with the
	// given id is stored.
	ErrNotFound = errkind.New(errkind.NotFound, "discovery evidence not found")

	// ErrCorrupt is returned by Lookup when the stored bytes of an evidence
	// record no longer hash to its id or no longer decode as a result.
	ErrCorrupt = errkind.New(errkind.Corrupt, "discovery evidence corrupt")

	// ErrBadQuery is returned by Discover, Rederive and ExtractTerms when the
	// input cannot be discovered on: an empty query, both a prompt and terms,
	// a prompt that is blank, not UTF-8 or over Options.MaxPromptBytes, more
	// terms than Options.MaxTerms (given, or extracted from a prompt), a term
	// that is empty, not UTF-8 or over MaxTermBytes.
	ErrBadQuery = errkind.Coded(errkind.Invalid, "bad-query", "bad discovery query")

	// ErrStarting is returned by Ready while the text index the keyword
	// tier reads or the relevance tier's index is still being built.
	ErrStarting = errkind.Coded(errkind.Unavailable, "not-ready", "discovery is starting: the text indexes are being built")
)
