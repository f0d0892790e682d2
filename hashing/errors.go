package hashing

import "github.com/groundgate/groundgate/errkind"

// ErrMalformed is returned when a digest string or a JSON document cannot be
// parsed into its canonical form.
var ErrMalformed = errkind.New(errkind.Invalid, "malformed")
