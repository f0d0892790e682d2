package runs

import (
	"fmt"

	"github.com/groundgate/groundgate/errkind"
)

// Sentinel errors. Callers match them with errors.Is; the HTTP layer maps
// them to problem types in one place.
var (
	// ErrNotFound is returned by Get and Cancel for a run that was never
	// started or that retention has dropped.
	ErrNotFound = errkind.New(errkind.NotFound, "fuzz run not found")

	// ErrInvalid is returned by Start for a time budget or seed out of
	// range.
	ErrInvalid = errkind.Coded(errkind.Invalid, "invalid-fuzz-run", "invalid fuzz run")

	// ErrRunning is returned (wrapped in a *RunningError) by Start while
	// another run is running: one run at a time.
	ErrRunning = errkind.Coded(errkind.Conflict, "fuzz-run-in-progress", "a fuzz run is running")

	// ErrCorrupt is returned when a stored run or finding no longer hashes
	// to what its record says.
	ErrCorrupt = errkind.New(errkind.Corrupt, "fuzz run corrupt")

	// ErrNotQueued is returned by Adopt for a run that no longer waits
	// for a worker: adopted by another, ended, cancelled, or failed as
	// untaken.
	ErrNotQueued = errkind.New(errkind.Conflict, "fuzz run not waiting for a worker")

	// ErrClosed is returned by Start after Close.
	ErrClosed = errkind.New(errkind.Unavailable, "fuzz runs closed")
)

// RunningError names the run that is running when Start is refused.
type RunningError struct{ ID uint64 }

func (e *RunningError) Error() string {
	return fmt.Sprintf("fuzz run %d is running; one run at a time", e.ID)
}

func (e *RunningError) Unwrap() error { return ErrRunning }
