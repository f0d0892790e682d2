package contract

import "github.com/groundgate/groundgate/errkind"

// ErrNotScalar is Expr.Eval's error for a value that is none of int,
// double, string and bool.
var ErrNotScalar = errkind.New(errkind.Invalid, "not an int, double, string or bool")
