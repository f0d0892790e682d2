package hashing

import "errors"

// ErrMalformed is returned when a digest string or a JSON document cannot be
// parsed into its canonical form.
var ErrMalformed = errors.New("malformed")
