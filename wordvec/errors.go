package wordvec

import "github.com/groundgate/groundgate/errkind"

// ErrCorrupt is wrapped by every error Parse returns for bytes that are not
// a valid table.
var ErrCorrupt = errkind.New(errkind.Corrupt, "wordvec: not a valid table")
