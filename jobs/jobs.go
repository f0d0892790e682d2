// Package jobs is groundgate's job queue (SPEC §17): executions run as
// jobs on a PostgreSQL-backed queue (River, github.com/riverqueue/river)
// in the shared store's database, so that a grid admitted by one server
// runs on any `groundgate worker`.
//
// # The job
//
// A job is the execution of one stored grounding, and its only argument
// is the grounding's id. The worker loads the grounding record from the
// shared store (ground.Gate.Load: the bytes hash to the id, the request
// was admitted, the policies in force still admit it) and executes what
// it loaded: nothing in the job can make it run anything but what the
// gate admitted. The job's output (River's recorded output) is the
// execution hash; the server reads the footprint from the store by it.
//
// # Server side and worker side
//
// Queue implements the server's Execute by inserting the job and waiting
// for it (bounded by the caller's context and Options.Wait). Jobs are
// unique per grounding while one is pending or running: a second request
// for the same grounding waits for the same job. A job that fails for
// good answers with its error's kind and code (over budget stays a 4xx);
// a worker's death is not the client's error (ErrLost, unavailable).
//
// Worker runs River's client with N goroutines, each calling a Runner.
// A Runner's error of a kind that another attempt cannot change (not
// found, invalid, refused, conflict, too large, corrupt, unauthorized)
// cancels the job; busy, unavailable and unclassified errors retry with
// backoff, up to MaxAttempts.
//
// # A worker killed mid-job
//
// River rescues a job that has been running for longer than
// RescueAfter (its worker died, or hangs): the job is made retryable and
// another worker runs it again. The executor is deterministic and its
// store first-writer-wins (a footprint's hash names its content; blobs
// are content-addressed), so a job run twice, or run by two workers at
// once, stores one footprint and both runs return one hash.
//
// Both sides create River's tables on first use (Migrate: idempotent,
// under an advisory lock, so that processes starting together do not
// race).
package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/loglevel"
)

// Queue names and limits. They are part of the deployment's contract:
// servers and workers of one release agree on them.
const (
	// QueueExecutions is the River queue executions run on.
	QueueExecutions = "executions"
	// KindExecute is the job kind of an execution.
	KindExecute = "groundgate.execute"
	// MaxAttempts bounds the runs of one job: each worker death, timeout
	// or transient failure is one. After the last, the job is discarded
	// and Queue.Execute returns ErrLost.
	MaxAttempts = 5
)

// ExecuteArgs are an execution job's arguments: the grounding id, and
// nothing else a worker could be lied to with. It is a string, not a
// hashing.Digest, so that a job whose argument is not a digest reaches
// the worker's check (and is cancelled as ErrInvalidJob) rather than
// failing River's decoding over and over.
type ExecuteArgs struct {
	Grounding string `json:"grounding"`
}

// Kind is River's name for the job.
func (ExecuteArgs) Kind() string { return KindExecute }

// pendingStates are the states in which a job for a grounding makes a
// second one a duplicate: while it waits or runs. A finished job does not
// (the data at the request's path may have changed since; executing
// again is how a client asks).
var pendingStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled,
}

// InsertOpts puts executions on their queue, unique per grounding while
// one is pending.
func (ExecuteArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueExecutions, MaxAttempts: MaxAttempts,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: pendingStates}}
}

// Runner executes a stored grounding and returns the execution hash; the
// footprint is in the shared store when it returns. internal/app's
// implementation loads the grounding through the gate and runs the
// executor.
type Runner interface {
	Run(ctx context.Context, grounding hashing.Digest) (hashing.Digest, error)
}

// Output is a job's recorded output: the execution hash, or the last
// attempt's failure.
type Output struct {
	Hash  string   `json:"hash,omitempty"`
	Error *Failure `json:"error,omitempty"`
}

// Failure is an attempt's error as the server answers it: its kind and
// code (errkind), its text, and the attempt it ended.
type Failure struct {
	Kind    string `json:"kind"`
	Code    string `json:"code,omitempty"`
	Detail  string `json:"detail"`
	Attempt int    `json:"attempt"`
}

// failureOf records err, which ended attempt.
func failureOf(err error, attempt int) *Failure {
	return &Failure{Kind: errkind.Of(err).String(), Code: errkind.CodeOf(err), Detail: err.Error(), Attempt: attempt}
}

// kindNames reads Failure.Kind back.
var kindNames = func() map[string]errkind.Kind {
	m := map[string]errkind.Kind{}
	for _, k := range errkind.Kinds() {
		m[k.String()] = k
	}
	return m
}()

// Err is the failure as an error of its kind and code, so that the
// server's one classifier answers it as it would the executor's own
// (an over-budget grid is a 422 whichever machine refused it). A failure
// of no kind stays of no kind: a 500, its text logged.
func (f *Failure) Err() error {
	k, ok := kindNames[f.Kind]
	if !ok {
		return fmt.Errorf("on a worker: %s", f.Detail)
	}
	return errkind.Coded(k, f.Code, f.Detail)
}

// permanent reports whether err is one another attempt cannot change:
// the grounding, the request, the data or the registry say no. Busy,
// unavailable and unclassified errors (a store's hiccup, a cancelled
// context) may pass.
func permanent(err error) bool {
	switch errkind.Of(err) {
	case errkind.NotFound, errkind.Corrupt, errkind.Invalid, errkind.Conflict,
		errkind.Refused, errkind.Unauthorized, errkind.TooLarge:
		return true
	}
	return false
}

// decodeOutput reads a job row's recorded output; nil when there is none.
func decodeOutput(row *rivertype.JobRow) (*Output, error) {
	raw := row.Output()
	if len(raw) == 0 {
		return nil, nil
	}
	var out Output
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("jobs: job %d: output: %w", row.ID, err)
	}
	return &out, nil
}

// migrateLock is the advisory lock Migrate holds: one process migrates
// at a time. (pgstore's is "ground"; this one is "jobs".)
const migrateLock = 0x6a6f6273

// Migrate creates or updates River's tables in pool's database. It is
// idempotent and safe when several processes start at once: it holds a
// session advisory lock while River's migrator runs (River's migrations
// may not all run in one transaction, so the lock is the session's).
func Migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("jobs: migrate: %w", errkind.Wrap(errkind.Unavailable, err))
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrateLock)); err != nil {
		return fmt.Errorf("jobs: migrate: lock: %w", errkind.Wrap(errkind.Unavailable, err))
	}
	defer func() {
		// A fresh context: the lock must go back even when ctx ended.
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, int64(migrateLock)); err != nil {
			conn.Conn().Close(uctx) // a closed session drops its locks
		}
	}()
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: quiet(logger)})
	if err != nil {
		return fmt.Errorf("jobs: migrate: %w", err)
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return fmt.Errorf("jobs: migrate: %w", errkind.Wrap(errkind.Unavailable, err))
	}
	for _, v := range res.Versions {
		logger.Debug("jobs: queue schema migrated", "version", v.Version)
	}
	return nil
}

// quiet is River's logger: River logs its routine at info level, which a
// worker's log does not need line by line; warnings and errors pass.
func quiet(logger *slog.Logger) *slog.Logger { return loglevel.AtLeast(logger, slog.LevelWarn) }

// newClient is River's client over pool with cfg; the queue's and the
// worker's share it.
func newClient(pool *pgxpool.Pool, cfg *river.Config) (*river.Client[pgx.Tx], error) {
	c, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return c, nil
}
