package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/groundgate/groundgate/hashing"
)

// Worker defaults. docs/operations.md ("Workers") explains the timing.
const (
	// DefaultJobTimeout bounds one attempt: twice the time the executor's
	// default budget (execution.DefaultMaxCells, about 30 s of work on a
	// 2-core machine) takes, for a busy machine. An attempt past it is
	// cancelled and retried.
	DefaultJobTimeout = time.Minute
	// RescueMargin is how much longer than the job timeout a job may be
	// seen running before River's rescuer takes it for its worker's death
	// and hands it to another worker. River's rescuer looks every 30 s, so
	// a killed worker's job runs again 70 to 105 s after it started
	// (retries are moved back to the queue every 5 s).
	RescueMargin = 10 * time.Second
	// DefaultStopTimeout is how long a stopping worker lets its running
	// jobs finish before it cancels them and hands them back.
	DefaultStopTimeout = 30 * time.Second
)

// WorkerOptions configure a Worker; the zero value takes the defaults.
type WorkerOptions struct {
	// Concurrency is how many jobs run at once; 0 is runtime.NumCPU().
	Concurrency int
	// JobTimeout bounds one attempt (DefaultJobTimeout); RescueAfter is
	// when a running job counts as its worker's death (JobTimeout +
	// RescueMargin). Every worker of a deployment should use the same:
	// whichever leads the queue rescues with its own.
	JobTimeout  time.Duration
	RescueAfter time.Duration
	// StopTimeout bounds the graceful stop (DefaultStopTimeout).
	StopTimeout time.Duration
	// Logger receives a line per job; nil discards.
	Logger *slog.Logger
	// Fuzz, when set, makes the worker take fuzz runs too (QueueFuzz),
	// one at a time: a run tests the whole registry, and one runs at a
	// time across the deployment anyway.
	Fuzz FuzzRunner
}

// Worker runs execution jobs (and, with WorkerOptions.Fuzz, fuzz runs)
// from the queue until stopped.
type Worker struct {
	client *river.Client[pgx.Tx]
	run    Runner
	log    *slog.Logger
	stop   time.Duration
}

// NewWorker makes a worker over pool (the shared store's:
// pgstore.Store.Pool) that runs each job with r. It creates the queue's
// tables when missing.
func NewWorker(ctx context.Context, pool *pgxpool.Pool, r Runner, opt WorkerOptions) (*Worker, error) {
	if r == nil {
		return nil, errors.New("jobs: NewWorker needs a Runner")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Concurrency <= 0 {
		opt.Concurrency = runtime.NumCPU()
	}
	if opt.JobTimeout <= 0 {
		opt.JobTimeout = DefaultJobTimeout
	}
	if opt.RescueAfter <= 0 {
		opt.RescueAfter = opt.JobTimeout + RescueMargin
	}
	if opt.RescueAfter < opt.JobTimeout {
		return nil, fmt.Errorf("jobs: RescueAfter %s is shorter than JobTimeout %s: running jobs would be rescued", opt.RescueAfter, opt.JobTimeout)
	}
	if opt.StopTimeout <= 0 {
		opt.StopTimeout = DefaultStopTimeout
	}
	if err := Migrate(ctx, pool, opt.Logger); err != nil {
		return nil, err
	}
	w := &Worker{run: r, log: opt.Logger, stop: opt.StopTimeout}
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(w.work))
	queues := map[string]river.QueueConfig{QueueExecutions: {MaxWorkers: opt.Concurrency}}
	if opt.Fuzz != nil {
		river.AddWorker(workers, fuzzWorker{run: opt.Fuzz, log: opt.Logger})
		queues[QueueFuzz] = river.QueueConfig{MaxWorkers: 1}
	}
	c, err := newClient(pool, &river.Config{
		Queues:               queues,
		Workers:              workers,
		JobTimeout:           opt.JobTimeout,
		RescueStuckJobsAfter: opt.RescueAfter,
		RetryPolicy:          retryPolicy{},
		Logger:               quiet(opt.Logger),
		SoftStopTimeout:      opt.StopTimeout,
	})
	if err != nil {
		return nil, err
	}
	w.client = c
	return w, nil
}

// Run works jobs until ctx is done, then stops gracefully: it takes no new
// job, lets the running ones finish for up to StopTimeout, then cancels
// them, and they go back to the queue at once (not counted as attempts)
// for another worker.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("jobs: start: %w", err)
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), w.stop+5*time.Second)
	defer cancel()
	if err := w.client.Stop(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("jobs: stop: %w", err)
	}
	return nil
}

// work runs one job: the Runner's verdict, recorded as the job's output.
func (w *Worker) work(ctx context.Context, job *river.Job[ExecuteArgs]) error {
	began := time.Now()
	id, err := hashing.Parse(job.Args.Grounding)
	if err == nil && id.Algorithm() != hashing.SHA256 {
		err = errors.New("not a sha256 digest")
	}
	if err != nil {
		err = fmt.Errorf("%w: %q: %v", ErrInvalidJob, clip(job.Args.Grounding), err)
		w.log.LogAttrs(ctx, slog.LevelWarn, "job cancelled", slog.Int64("job", job.ID), slog.Any("error", err))
		_ = river.RecordOutput(ctx, Output{Error: failureOf(err, job.Attempt)})
		return river.JobCancel(err)
	}
	hash, err := w.run.Run(ctx, id)
	attrs := []slog.Attr{slog.Int64("job", job.ID), slog.String("grounding", id.String()),
		slog.Int("attempt", job.Attempt), slog.Duration("took", time.Since(began))}
	switch {
	case err == nil:
		w.log.LogAttrs(ctx, slog.LevelInfo, "job done", append(attrs, slog.String("hash", hash.String()))...)
		return river.RecordOutput(ctx, Output{Hash: hash.String()})
	case ctx.Err() != nil && context.Cause(ctx) != context.DeadlineExceeded && !permanent(err):
		// Stopping: hand the job back now, without spending an attempt.
		w.log.LogAttrs(context.WithoutCancel(ctx), slog.LevelInfo, "job handed back", attrs...)
		return river.JobSnooze(0)
	}
	_ = river.RecordOutput(ctx, Output{Error: failureOf(err, job.Attempt)})
	if permanent(err) {
		w.log.LogAttrs(ctx, slog.LevelInfo, "job refused", append(attrs, slog.Any("error", err))...)
		return river.JobCancel(err)
	}
	w.log.LogAttrs(context.WithoutCancel(ctx), slog.LevelWarn, "job failed, will retry", append(attrs, slog.Any("error", err))...)
	return err
}

// clip bounds a job argument quoted in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// retryPolicy retries an execution after 1, 2, 4, 8… seconds, at most 30:
// a transient failure (a store's restart) passes in seconds, and a client
// is waiting. River's default waits attempt⁴ seconds.
type retryPolicy struct{}

func (retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	n := min(max(job.Attempt, 1), 6)
	return time.Now().Add(min(time.Duration(1<<(n-1))*time.Second, 30*time.Second))
}
