package relevance

import "github.com/groundgate/groundgate/errkind"

// ErrSnapshot is wrapped by ReadSnapshot for bytes that are not a usable
// snapshot (another format, another scoring rule, damaged).
var ErrSnapshot = errkind.New(errkind.Corrupt, "relevance: not a usable snapshot")

// ErrNoName is returned by Add for a document without a name.
var ErrNoName = errkind.New(errkind.Invalid, "relevance: document without a name")
