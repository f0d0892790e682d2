package kernel

import "github.com/groundgate/groundgate/errkind"

// Sentinel errors, returned wrapped with context (test with errors.Is).
var (
	// ErrParam is returned for a parameter outside its domain: a window
	// below its minimum, a negative shift (look-ahead), lo > hi in a clip,
	// a non-positive leverage or target volatility, a lag below 1.
	ErrParam = errkind.New(errkind.Invalid, "invalid parameter")

	// ErrLength is returned when series that must be aligned row for row
	// have different lengths.
	ErrLength = errkind.New(errkind.Invalid, "series lengths differ")

	// ErrColumn is returned when a family needs a column the frame does not
	// have (CARRY's front and next), or the frame has no column at all.
	ErrColumn = errkind.New(errkind.Invalid, "missing column")

	// ErrUnknown is returned for a family or metric name this package does
	// not implement.
	ErrUnknown = errkind.New(errkind.Invalid, "unknown name")
)
