package series

import "github.com/groundgate/groundgate/errkind"

// ErrMalformed is returned (wrapped) by Decode and Unpack for bytes that
// are not a valid encoding.
var ErrMalformed = errkind.New(errkind.Corrupt, "series: malformed encoding")
