package jobs

import "github.com/groundgate/groundgate/errkind"

// Sentinel errors, returned wrapped with context; match them with
// errors.Is. A failure the worker reports keeps its own kind and code
// (Failure.Err); these are the queue's own.
var (
	// ErrInvalidJob is what a worker reports for a job whose arguments
	// name no grounding (not a sha256 digest): it is cancelled, never
	// retried.
	ErrInvalidJob = errkind.New(errkind.Invalid, "jobs: the job names no grounding")

	// ErrLost is returned by Queue.Execute when the queue gave up on an
	// execution without a verdict of the executor: every attempt ended in
	// a worker's death, a timeout or a transient failure. The execution
	// may be asked for again.
	ErrLost = errkind.New(errkind.Unavailable, "jobs: the workers gave up on the execution")

	// ErrStillRunning is returned by Queue.Execute when the execution has
	// not finished within Options.Wait: it goes on, and asking again
	// waits for the same job (jobs are unique per grounding while one is
	// pending).
	ErrStillRunning = errkind.New(errkind.Busy, "jobs: the execution is still running on a worker")

	// ErrNoWorker is returned by Queue.Execute when the job has waited
	// untaken for seconds and no worker is running against the store (no
	// River leader holds a lease): the job stays queued, a worker started
	// later runs it, and asking again waits for the same job.
	ErrNoWorker = errkind.New(errkind.Unavailable, "jobs: no groundgate worker is running against this store; the execution waits in the queue: start one and ask again")

	// ErrNotTaken is returned by Queue.AwaitTaken when a worker runs
	// against the store but none took the job within the bound (its
	// workers take no fuzz runs, or are stuck): the job is cancelled.
	ErrNotTaken = errkind.New(errkind.Unavailable, "jobs: no groundgate worker took the job in time; workers run against this store, but none took it (a release without fuzz runs?)")

	// ErrClosed is returned by a Queue used after Close.
	ErrClosed = errkind.New(errkind.Unavailable, "jobs: queue closed")
)
