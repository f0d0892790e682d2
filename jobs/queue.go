package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
)

// Footprints reads a stored footprint by its execution hash: the
// server's local executor (execution.Executor.Get) over the shared store.
type Footprints interface {
	Get(ctx context.Context, hash hashing.Digest) (*execution.Footprint, error)
}

var _ Footprints = (*execution.Executor)(nil)

// DefaultWait bounds Queue.Execute's wait: below the server's write
// timeout (120 s), so that a client always gets an answer, and above the
// job timeout, so that one attempt's full run is waited for.
const DefaultWait = 110 * time.Second

// Options configure a Queue; the zero value takes the defaults.
type Options struct {
	// Wait bounds how long Execute waits for the job (DefaultWait);
	// past it, ErrStillRunning.
	Wait time.Duration
	// Logger receives the queue's events; nil discards.
	Logger *slog.Logger
}

// Queue is the server's side of the queue: Execute enqueues and waits.
// It is safe for concurrent use.
type Queue struct {
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	fps    Footprints
	wait   time.Duration
	log    *slog.Logger
	closed atomic.Bool
}

// NewQueue makes a queue over pool (the shared store's: pgstore.Store.Pool)
// whose finished jobs' footprints are read from fps. It creates the
// queue's tables when missing. It runs no job itself: workers do.
func NewQueue(ctx context.Context, pool *pgxpool.Pool, fps Footprints, opt Options) (*Queue, error) {
	if fps == nil {
		return nil, errors.New("jobs: NewQueue needs a footprint reader")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Wait <= 0 {
		opt.Wait = DefaultWait
	}
	if err := Migrate(ctx, pool, opt.Logger); err != nil {
		return nil, err
	}
	// An insert-only client: no queues, no workers, never started.
	c, err := newClient(pool, &river.Config{Logger: quiet(opt.Logger)})
	if err != nil {
		return nil, err
	}
	return &Queue{pool: pool, client: c, fps: fps, wait: opt.Wait, log: opt.Logger}, nil
}

// Close makes the queue refuse further executions; waits in progress end
// with their contexts. The pool is its owner's.
func (q *Queue) Close() error {
	q.closed.Store(true)
	return nil
}

// Execute runs g on a worker and returns its footprint, read from the
// shared store: the executor's Execute, through the queue. Only the id
// travels; the worker loads and checks the grounding itself.
//
// Errors: execution.ErrNotGrounded for an invalid g; a failure of the
// executor's or the gate's on the worker with its own kind and code
// (over budget, drift, not admitted…); ErrLost when the queue gave up
// (workers died, transient failures) after MaxAttempts; ErrStillRunning
// past Options.Wait; the context's error when ctx ends first.
func (q *Queue) Execute(ctx context.Context, g *ground.Grounded) (*execution.Footprint, error) {
	if !g.Valid() {
		return nil, execution.ErrNotGrounded
	}
	if q.closed.Load() {
		return nil, ErrClosed
	}
	id := g.ID()
	res, err := q.client.Insert(ctx, ExecuteArgs{Grounding: id.String()}, nil)
	if err != nil {
		return nil, fmt.Errorf("jobs: enqueue %s: %w", id, errkind.Wrap(errkind.Unavailable, err))
	}
	q.log.LogAttrs(ctx, slog.LevelDebug, "execution queued", slog.String("grounding", id.String()),
		slog.Int64("job", res.Job.ID), slog.Bool("joined", res.UniqueSkippedAsDuplicate))
	hash, err := q.await(ctx, res.Job.ID)
	if err != nil {
		return nil, fmt.Errorf("execution of %s (job %d): %w", id, res.Job.ID, err)
	}
	return q.fps.Get(ctx, hash)
}

// Poll intervals of await: quick for the first answers (a grid of a few
// morphisms takes tens of milliseconds), then at most pollMax apart (a
// query each; a 100-morphism grid takes seconds).
const (
	pollMin = 10 * time.Millisecond
	pollMax = 250 * time.Millisecond
)

// untaken is how long a job may wait untaken before await asks whether
// any worker runs at all: a server whose deployment has no worker answers
// within seconds, not after Options.Wait.
const untaken = 5 * time.Second

// waiting is a wait for a job to be taken: when it began, and when it
// last asked whether any worker runs.
type waiting struct{ began, asked time.Time }

// noWorker reports, once a job has waited untaken for untaken and at most
// once per untaken after that, that no worker runs against the store. A
// failed question answers false: the wait goes on.
func (q *Queue) noWorker(ctx context.Context, w *waiting) bool {
	if time.Since(w.began) <= untaken || time.Since(w.asked) <= untaken {
		return false
	}
	w.asked = time.Now()
	alive, err := q.workerAlive(ctx)
	return err == nil && !alive
}

// workerAlive reports whether a worker is running against the queue's
// database: River's workers elect a leader among themselves and renew
// its lease every few seconds (an insert-only client, the server's,
// never does); no unexpired lease means no worker.
func (q *Queue) workerAlive(ctx context.Context) (bool, error) {
	var alive bool
	err := q.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM river_leader WHERE expires_at > now())").Scan(&alive)
	return alive, err
}

// await polls job id until it is finished, and returns the execution hash
// or the job's failure.
func (q *Queue) await(ctx context.Context, id int64) (hashing.Digest, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, q.wait, ErrStillRunning)
	defer cancel()
	var hash hashing.Digest
	w := waiting{began: time.Now()}
	err := q.poll(ctx, id, func(row *rivertype.JobRow) (bool, error) {
		h, done, err := finished(row)
		if done {
			hash = h
			return true, err
		}
		if row.State != rivertype.JobStateRunning && q.noWorker(ctx, &w) {
			return true, ErrNoWorker
		}
		return false, nil
	})
	return hash, err
}

// poll reads job id's row, quickly at first then at most pollMax apart,
// and hands each to step until step says done (returning its error) or
// ctx ends. A poll is one primary-key read; LISTEN/NOTIFY would need
// River's completion to notify, which it does not for another client's
// jobs.
func (q *Queue) poll(ctx context.Context, id int64, step func(*rivertype.JobRow) (bool, error)) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for delay := pollMin; ; delay = min(delay*2, pollMax) {
		select {
		case <-ctx.Done():
			if cause := context.Cause(ctx); errors.Is(cause, ErrStillRunning) {
				return cause
			}
			return ctx.Err()
		case <-t.C:
		}
		row, err := q.client.JobGet(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				continue // answered by the select
			}
			return errkind.Wrap(errkind.Unavailable, err)
		}
		if done, err := step(row); done {
			return err
		}
		t.Reset(delay)
	}
}

// finished reads a job row: whether it is finished, and then its hash or
// error.
func finished(row *rivertype.JobRow) (hashing.Digest, bool, error) {
	var out *Output
	switch row.State {
	case rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded:
		var err error
		if out, err = decodeOutput(row); err != nil {
			return hashing.Digest{}, true, err
		}
	default:
		return hashing.Digest{}, false, nil
	}
	switch {
	case row.State == rivertype.JobStateCompleted && out != nil && out.Hash != "":
		h, err := hashing.Parse(out.Hash)
		if err != nil {
			return hashing.Digest{}, true, errkind.Wrap(errkind.Corrupt, fmt.Errorf("the job's output names no execution: %w", err))
		}
		return h, true, nil
	case row.State == rivertype.JobStateCancelled && out != nil && out.Error != nil:
		return hashing.Digest{}, true, out.Error.Err()
	case row.State == rivertype.JobStateDiscarded && out != nil && out.Error != nil && out.Error.Attempt == row.Attempt:
		// The last attempt failed on a worker (not by its death): that
		// failure is the answer, of its own kind.
		return hashing.Digest{}, true, fmt.Errorf("%w after %d attempts: %w", ErrLost, row.Attempt, out.Error.Err())
	case row.State == rivertype.JobStateDiscarded:
		return hashing.Digest{}, true, fmt.Errorf("%w after %d attempts: %s", ErrLost, row.Attempt, lastError(row))
	}
	// Cancelled by hand (River's UI, JobCancel) or finished without an
	// output: not the client's doing.
	return hashing.Digest{}, true, fmt.Errorf("%w: the job ended %s without a result: %s", ErrLost, row.State, lastError(row))
}

// lastError is the text of the job's last attempt error, for a message.
func lastError(row *rivertype.JobRow) string {
	if n := len(row.Errors); n > 0 {
		return row.Errors[n-1].Error
	}
	return "no error recorded"
}
