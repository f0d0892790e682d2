package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"

	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/logbuf"
	"github.com/groundgate/groundgate/jobs"
	"github.com/groundgate/groundgate/policy"
)

type workerCmd struct{}

func (workerCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("worker", "worker --store postgres://… --blobs s3://… [--data DIR] [--concurrency N] [--job-timeout D] [--max-cells N] [--max-held-bytes N] [--solver z3|cvc5] [--policy-timeout D]")
	dsn := fs.String("store", "", "the shared store's PostgreSQL `DSN` (postgres://…), the servers' --store")
	blobs := fs.String("blobs", "", "the shared store's S3 bucket `URL` (s3://BUCKET[/PREFIX]?endpoint=…), the servers' --blobs; credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	data := fs.String("data", "", "data root `dir`, with the same bytes as the servers' --data (default: the bundled sample data)")
	concurrency := fs.Int("concurrency", runtime.NumCPU(), "executions this worker runs at once (`n`)")
	jobTimeout := fs.Duration("job-timeout", jobs.DefaultJobTimeout, "bound on one attempt of a job (`duration`); a job seen running for this plus 10 s counts as its worker's death and runs again elsewhere: use one value on every worker")
	maxCells := fs.Int64("max-cells", execution.DefaultMaxCells, "work budget of one execution in `cells`, as serve's")
	maxHeld := fs.Int64("max-held-bytes", execution.DefaultMaxHeldBytes, "series one execution may hold until it scores, in `bytes`, as serve's")
	solver := fs.String("solver", "z3", "SMT `solver` that re-checks the policies in force: z3 or cvc5")
	policyTimeout := fs.Duration("policy-timeout", policy.DefaultTimeout, "bound on one policy solver query (`duration`)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: worker takes no arguments", errUsage)
	}
	if *dsn == "" || *blobs == "" {
		return fmt.Errorf("%w: worker needs --store and --blobs", errUsage)
	}
	if *concurrency <= 0 || *jobTimeout <= 0 || *maxCells <= 0 || *maxHeld <= 0 || *policyTimeout <= 0 {
		return fmt.Errorf("%w: --concurrency, --job-timeout, --max-cells, --max-held-bytes and --policy-timeout must be positive", errUsage)
	}
	logs := logbuf.New(cli.Stderr, logbuf.Interval)
	defer logs.Close()
	logger := slog.New(logbuf.Handler(slog.NewJSONHandler(logs, nil), logs))
	w, err := app.OpenWorker(ctx, app.WorkerConfig{
		Store: *dsn, Blobs: *blobs, Getenv: cli.Getenv, Data: *data,
		Jobs:   jobs.WorkerOptions{Concurrency: *concurrency, JobTimeout: *jobTimeout},
		Exec:   execution.Options{MaxCells: *maxCells, MaxHeldBytes: *maxHeld},
		Solver: *solver, PolicyTimeout: *policyTimeout, Logger: logger,
	})
	if err != nil {
		return err
	}
	return w.Run(ctx)
}
