package execution

import (
	"fmt"

	"github.com/groundgate/groundgate/errkind"
)

// Sentinel errors, returned wrapped with context; match them with
// errors.Is. Their kinds and codes decide how the edges answer them
// (server/problem.go, docs/api.md).
var (
	// ErrNotGrounded is returned by Execute for a request that did not come
	// out of the gate (a nil or zero *ground.Grounded): a bare request
	// never executes.
	ErrNotGrounded = errkind.Coded(errkind.Refused, "not-admitted", "request is not grounded")

	// ErrNotFound is returned by Get, Replay and Diff for an execution hash
	// with no stored footprint, and by Replay when the footprint's data
	// blob or registry version is not stored.
	ErrNotFound = errkind.New(errkind.NotFound, "execution not found")

	// ErrCorrupt is returned when a stored footprint no longer hashes to
	// its key or disagrees with its own layers, or when a blob it needs no
	// longer hashes to its digest. Corrupt records are never served.
	ErrCorrupt = errkind.New(errkind.Corrupt, "execution record corrupt")

	// ErrBadData is returned by Execute when the data file exists inside
	// the data root but cannot be used: malformed CSV (ragged rows,
	// duplicate or unsorted dates, non-numeric cells — the message names
	// the file, line and column; errors.As finds the *frame.ParseError),
	// an empty file, a broken gzip stream, a file over the size limit.
	// Nothing is stored.
	ErrBadData = errkind.Coded(errkind.Invalid, "bad-data", "bad data")

	// ErrDrift is returned when the request's family or metric does not
	// resolve, by name and kind, in the registry version the executor runs
	// against. Executions run at the version their grounding was decided
	// against, where the gate found both, so for a genuine grounding it
	// means the stored records disagree. It is the executor's side of
	// failure code F7.
	ErrDrift = errkind.Coded(errkind.Conflict, "registry-drift", "registry drift")

	// ErrNotRunnable is returned when the metric resolves but the engine
	// cannot run it: another engine, an expression that names no metric
	// kernel, an orientation that is neither maximize nor minimize. The
	// registry is domain-free and accepts such entries; the executor
	// refuses them, and nothing is stored.
	ErrNotRunnable = errkind.Coded(errkind.Invalid, "not-runnable", "capability not runnable by this engine")

	// ErrOverBudget is returned by Execute and Replay, before any morphism
	// runs, when the grid's work or the memory it would hold exceeds the
	// executor's budget (Options.MaxCells, Options.MaxHeldBytes). The
	// message names the budget and the estimate. Nothing is stored.
	ErrOverBudget = errkind.Coded(errkind.TooLarge, "over-budget", "execution over budget")

	// ErrBusy is returned by Execute and Replay when the executor already
	// runs and queues as many executions as it admits; try again later.
	ErrBusy = errkind.Coded(errkind.Busy, "busy", "executor busy")

	// ErrDataChanged is returned by Execute when a policy read the data
	// source's facts at grounding (SPEC §10) and the source's bytes have
	// changed since: what was authorised is not what would run.
	ErrDataChanged = errkind.Coded(errkind.Conflict, "data-changed", "data changed since grounding")
)

// PanicError is a kernel's panic, recovered: it rejects its morphism (a
// "run: …" domain reason), and the server keeps going. It has no kind: a
// panic is a bug, never the request's fault. Its text is the reason's, so
// it must not change (footprints hash it).
type PanicError struct {
	Op    string // the plan node's op, when the panic is a node's
	Value any    // what the kernel panicked with
}

func (e *PanicError) Error() string {
	if e.Op != "" {
		return fmt.Sprintf("%s: internal error: %v", e.Op, e.Value)
	}
	return fmt.Sprintf("internal error: %v", e.Value)
}
