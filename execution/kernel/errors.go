package kernel

import "errors"

// Sentinel errors, returned wrapped with context (test with errors.Is).
var (
	// ErrParam is returned for a parameter outside its domain: a window
	// below its minimum, a negative shift (look-ahead), lo > hi in a clip,
	// a non-positive leverage or target volatility, a lag below 1.
	ErrParam = errors.New("invalid parameter")

	// ErrLength is returned when series that must be aligned row for row
	// have different lengths.
	ErrLength = errors.New("series lengths differ")

	// ErrColumn is returned when a family needs a column the frame does not
	// have (CARRY's front and next), or the frame has no column at all.
	ErrColumn = errors.New("missing column")

	// ErrUnknown is returned for a family or metric name this package does
	// not implement.
	ErrUnknown = errors.New("unknown name")
)
