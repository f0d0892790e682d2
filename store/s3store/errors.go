package s3store

import "github.com/groundgate/groundgate/errkind"

// ErrConfig is returned by Open when the configuration is incomplete or
// names a bucket that does not exist.
var ErrConfig = errkind.New(errkind.Invalid, "s3store: configuration")
