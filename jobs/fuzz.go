package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/groundgate/groundgate/errkind"
)

// Fuzz runs (SPEC §12) on a shared store are jobs too: the server stores
// the run and enqueues its id; a worker adopts the stored run and runs
// it. The run's record, not the job, is the run's truth: its owner, lease
// and end are written by package fuzz/runs, and the job only carries the
// id to a worker.
const (
	// QueueFuzz is the River queue fuzz runs go on.
	QueueFuzz = "fuzz"
	// KindFuzzRun is the job kind of a fuzz run.
	KindFuzzRun = "groundgate.fuzz_run"
	// FuzzJobTimeout bounds a fuzz job: far above a run's longest budget
	// (600 s) plus its runtime tests' setup, so that it only ends a hung
	// run. River's rescuer leaves a fuzz job alone for as long.
	FuzzJobTimeout = 20 * time.Minute
	// DefaultTakeWithin is how long a fuzz job may wait untaken while
	// a worker is running before the run is failed (workers of a release
	// that takes no fuzz runs never take it).
	DefaultTakeWithin = 15 * time.Second
)

// FuzzRunArgs are a fuzz job's arguments: the run's id in the shared
// store, nothing else (the worker reads the run's request from its
// record).
type FuzzRunArgs struct {
	Run uint64 `json:"run"`
}

// Kind is River's name for the job.
func (FuzzRunArgs) Kind() string { return KindFuzzRun }

// InsertOpts: one attempt, never retried. A worker that dies mid-run
// leaves a run whose lease passes, which every server reports interrupted,
// as a killed server's run is; another attempt could not adopt it.
// Unique per run id while pending.
func (FuzzRunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueFuzz, MaxAttempts: 1,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: pendingStates}}
}

// FuzzRunner runs a stored fuzz run to its end on a worker
// (runs.Manager.Adopt): adopts it, runs it, stores its end.
type FuzzRunner interface {
	RunFuzz(ctx context.Context, run uint64) error
}

// EnqueueFuzzRun inserts the job of run id and returns the job's id.
func (q *Queue) EnqueueFuzzRun(ctx context.Context, id uint64) (int64, error) {
	if q.closed.Load() {
		return 0, ErrClosed
	}
	res, err := q.client.Insert(ctx, FuzzRunArgs{Run: id}, nil)
	if err != nil {
		return 0, fmt.Errorf("jobs: enqueue fuzz run %d: %w", id, errkind.Wrap(errkind.Unavailable, err))
	}
	q.log.LogAttrs(ctx, slog.LevelDebug, "fuzz run queued", slog.Uint64("run", id), slog.Int64("job", res.Job.ID))
	return res.Job.ID, nil
}

// AwaitTaken waits until a worker has taken job (it runs, or has ended):
// nil then. ErrNoWorker when it has waited untaken for seconds and no
// worker runs against the store; ErrNotTaken past within although one
// does. Either way the job is cancelled, so that a worker started later
// does not take it.
func (q *Queue) AwaitTaken(ctx context.Context, job int64, within time.Duration) error {
	if within <= 0 {
		within = DefaultTakeWithin
	}
	err := q.awaitTaken(ctx, job, within)
	if errors.Is(err, ErrNoWorker) || errors.Is(err, ErrNotTaken) {
		if _, cerr := q.client.JobCancel(context.WithoutCancel(ctx), job); cerr != nil {
			q.log.LogAttrs(ctx, slog.LevelWarn, "untaken job not cancelled", slog.Int64("job", job), slog.Any("error", cerr))
		}
	}
	return err
}

func (q *Queue) awaitTaken(ctx context.Context, job int64, within time.Duration) error {
	w := waiting{began: time.Now()}
	return q.poll(ctx, job, func(row *rivertype.JobRow) (bool, error) {
		switch row.State {
		case rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateScheduled, rivertype.JobStateRetryable:
		default:
			return true, nil // running, or ended: taken
		}
		if time.Since(w.began) > within {
			return true, ErrNotTaken
		}
		if q.noWorker(ctx, &w) {
			return true, ErrNoWorker
		}
		return false, nil
	})
}

// fuzzWorker is River's worker of fuzz jobs: FuzzJobTimeout, not the
// client's JobTimeout (an execution's).
type fuzzWorker struct {
	river.WorkerDefaults[FuzzRunArgs]
	run FuzzRunner
	log *slog.Logger
}

func (fuzzWorker) Timeout(*river.Job[FuzzRunArgs]) time.Duration { return FuzzJobTimeout }

// Work runs the fuzz run; a failure is recorded and the job cancelled
// (one attempt). A run ended by the worker's shutdown is stored cancelled
// by the runner, as a server's shutdown cancels its run.
func (w fuzzWorker) Work(ctx context.Context, job *river.Job[FuzzRunArgs]) error {
	began := time.Now()
	err := w.run.RunFuzz(ctx, job.Args.Run)
	attrs := []slog.Attr{slog.Int64("job", job.ID), slog.Uint64("run", job.Args.Run), slog.Duration("took", time.Since(began))}
	if err == nil {
		w.log.LogAttrs(context.WithoutCancel(ctx), slog.LevelInfo, "fuzz job done", attrs...)
		return nil
	}
	w.log.LogAttrs(context.WithoutCancel(ctx), slog.LevelWarn, "fuzz job failed", append(attrs, slog.Any("error", err))...)
	_ = river.RecordOutput(ctx, Output{Error: failureOf(err, job.Attempt)})
	return river.JobCancel(err)
}
