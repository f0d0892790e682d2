package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/fuzz"
	"github.com/groundgate/groundgate/fuzz/runs"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/jobs"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/policy/smt"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/server"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/pgstore"
)

// WorkerConfig is everything `groundgate worker` needs; nothing is read
// from globals.
type WorkerConfig struct {
	// Store and Blobs name the shared store (--store, --blobs); Getenv
	// gives the object store's credentials (nil: os.Getenv).
	Store, Blobs string
	Getenv       func(string) string
	// Data is the data root (--data): the servers' own, or a copy with
	// the same bytes ("" is the bundled sample data).
	Data string
	// Jobs sizes and times the worker (--concurrency, --job-timeout); its
	// Logger is Logger.
	Jobs jobs.WorkerOptions
	// Exec bounds each execution as serve's flags do; MaxConcurrent
	// follows Jobs.Concurrency. Its Logger is Logger.
	Exec execution.Options
	// Solver and PolicyTimeout check the policies in force, as serve's.
	Solver        string
	PolicyTimeout time.Duration
	Logger        *slog.Logger
}

// Worker is a wired `groundgate worker`: the shared store, the registry,
// the gate (to load groundings) and the executor, behind the job queue.
type Worker struct {
	st     *pgstore.Store
	data   *DataRoot
	pool   *smt.Pool
	fuzz   *runs.Manager
	worker *jobs.Worker
	log    *slog.Logger
}

// OpenWorker opens the shared store and wires a worker over it.
func OpenWorker(ctx context.Context, cfg WorkerConfig) (*Worker, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Jobs.Concurrency <= 0 {
		cfg.Jobs.Concurrency = runtime.NumCPU()
	}
	data, err := OpenDataRoot(cfg.Data)
	if err != nil {
		return nil, err
	}
	st, err := OpenShared(ctx, cfg.Store, cfg.Blobs, cfg.Getenv, cfg.Logger)
	if err != nil {
		data.Close()
		return nil, err
	}
	w, err := newWorker(ctx, st, data, cfg)
	if err != nil {
		st.Close()
		data.Close()
		return nil, err
	}
	return w, nil
}

// newWorker wires a worker over an open store and data root, which it
// owns from then on (Close closes them).
func newWorker(ctx context.Context, st *pgstore.Store, data *DataRoot, cfg WorkerConfig) (*Worker, error) {
	r, pool, err := NewRunner(ctx, st, data, cfg)
	if err != nil {
		return nil, err
	}
	// Fuzz runs too: the same runs.Manager a server runs them with, over
	// the shared store, adopting the runs servers queue.
	fm, err := runs.Open(ctx, st, r.Registry, fuzzOptions(st, cfg.Data, true, nil, cfg.Logger))
	if err != nil {
		pool.Close()
		return nil, err
	}
	jopt := cfg.Jobs
	jopt.Logger = cfg.Logger
	jopt.Fuzz = FuzzRunner{Registry: r.Registry, Runs: fm}
	jw, err := jobs.NewWorker(ctx, st.Pool(), r, jopt)
	if err != nil {
		fm.Close()
		pool.Close()
		return nil, err
	}
	return &Worker{st: st, data: data, pool: pool, fuzz: fm, worker: jw, log: cfg.Logger}, nil
}

// fuzzOptions configures fuzz runs over st, the same on a server and a
// worker. The runtime tests run on a throwaway copy of the registry (and
// the policies) in a file of the run's own, taken by the process that
// runs the run (data is its --data). With q (a server on a shared store)
// runs are queued for workers.
func fuzzOptions(st store.Store, data string, shared bool, q *jobs.Queue, logger *slog.Logger) runs.Options {
	opt := runs.Options{Logger: logger, Shared: shared, TakeWithin: jobs.DefaultTakeWithin,
		Runtime: func(ctx context.Context) (*fuzz.Runtime, func() error, error) {
			return OpenFuzzRuntime(ctx, st, data)
		}}
	if q != nil {
		opt.Queue = q
	}
	return opt
}

// FuzzRunner is the worker's jobs.FuzzRunner: the registry brought up to
// date (a run is pinned to a version a server wrote; its runtime tests'
// scratch copy must be of that version), then the queued run adopted and
// run to its end.
type FuzzRunner struct {
	Registry *registry.Store
	Runs     *runs.Manager
}

var _ jobs.FuzzRunner = FuzzRunner{}

// RunFuzz runs the queued fuzz run id.
func (f FuzzRunner) RunFuzz(ctx context.Context, id uint64) error {
	if _, err := f.Registry.Refresh(ctx); err != nil {
		return err
	}
	return f.Runs.Adopt(ctx, id)
}

// Run works jobs until ctx is done, then stops gracefully (jobs.Worker.Run)
// and closes everything.
func (w *Worker) Run(ctx context.Context) error {
	w.log.Info("working", "queues", []string{jobs.QueueExecutions, jobs.QueueFuzz}, "data", w.data.Name)
	err := w.worker.Run(ctx)
	w.log.Info("stopped")
	return errors.Join(err, w.Close())
}

// Close releases the fuzz runs, the solvers, the data root and the store. Closing twice
// is harmless.
func (w *Worker) Close() error {
	var errs []error
	if w.fuzz != nil {
		// Before the store closes: a run still going is stored
		// cancelled (Run's stop has normally ended it already).
		errs = append(errs, w.fuzz.Close())
		w.fuzz = nil
	}
	if w.pool != nil {
		errs = append(errs, w.pool.Close())
		w.pool = nil
	}
	if w.data != nil {
		errs = append(errs, w.data.Close())
		w.data = nil
	}
	if w.st != nil {
		errs = append(errs, w.st.Close())
		w.st = nil
	}
	return errors.Join(errs...)
}

// Runner is the worker's jobs.Runner: the gate loads the grounding from
// the shared store (its bytes hash to the id, it was admitted, the
// policies in force still admit it) and the executor runs what was
// loaded, storing the footprint in the shared store.
type Runner struct {
	Gate *ground.Gate
	Exec *execution.Executor
	// Registry and Policies are followed before each job: a version or a
	// policy set a server wrote after this worker started is the one the
	// job is checked against, as on the server that admitted it.
	Registry *registry.Store
	Policies *policy.Store
}

var _ jobs.Runner = Runner{}

// Run executes the grounding stored under id.
func (r Runner) Run(ctx context.Context, id hashing.Digest) (hashing.Digest, error) {
	if r.Registry != nil {
		if _, err := r.Registry.Refresh(ctx); err != nil {
			return hashing.Digest{}, err
		}
	}
	if r.Policies != nil {
		if _, err := r.Policies.Refresh(ctx); err != nil {
			return hashing.Digest{}, err
		}
	}
	g, err := r.Gate.Load(ctx, id)
	if err != nil {
		return hashing.Digest{}, err
	}
	if g.ID() != id { // what runs is what the job named
		return hashing.Digest{}, fmt.Errorf("grounding %s loaded as %s: %w", id, g.ID(), ground.ErrCorrupt)
	}
	fp, err := r.Exec.Execute(ctx, g)
	if err != nil {
		return hashing.Digest{}, err
	}
	return fp.Hash, nil
}

// NewRunner builds a worker's Runner over st: the registry (every
// version, read from st), the policies in force and a solver pool to
// re-check them (returned: the caller closes it), the gate and the
// executor over data. The executor runs Jobs.Concurrency executions at
// once, which the queue already bounds.
func NewRunner(ctx context.Context, st store.Store, data *DataRoot, cfg WorkerConfig) (Runner, *smt.Pool, error) {
	contracts := contract.NewCache(1024)
	reg, err := registry.OpenEngine(ctx, st, registry.Options{Logger: cfg.Logger, Contracts: contracts})
	if err != nil {
		return Runner{}, nil, err
	}
	xopt := cfg.Exec
	xopt.Logger, xopt.Contracts = cfg.Logger, contracts
	xopt.MaxConcurrent = max(cfg.Jobs.Concurrency, xopt.MaxConcurrent)
	arts, err := execution.OpenArtifacts(st)
	if err != nil {
		return Runner{}, nil, err
	}
	exec, err := execution.New(reg, arts, st, data.FS, xopt)
	if err != nil {
		return Runner{}, nil, err
	}
	ps, pool, checker, err := openPolicies(ctx, st, cfg.Solver, cfg.PolicyTimeout)
	if err != nil {
		return Runner{}, nil, err
	}
	gate, err := ground.New(reg, noEvidence{}, st, ground.WithLogger(cfg.Logger),
		ground.WithPolicies(ps, checker, exec), ground.WithContracts(contracts))
	if err != nil {
		pool.Close()
		return Runner{}, nil, err
	}
	return Runner{Gate: gate, Exec: exec, Registry: reg, Policies: ps}, pool, nil
}

// errNoDiscovery is what a worker's gate answers to a discovery look-up:
// a worker only loads groundings, which never look evidence up.
var errNoDiscovery = errkind.New(errkind.Unavailable, "app: a worker does not discover")

// noEvidence is the worker's gate's discovery: none (Gate.Load reads the
// grounding record, not its evidence).
type noEvidence struct{}

func (noEvidence) Lookup(context.Context, hashing.Digest) (discover.Result, error) {
	return discover.Result{}, errNoDiscovery
}

func (noEvidence) Rederive(context.Context, []string, uint64) (discover.Result, error) {
	return discover.Result{}, errNoDiscovery
}

// QueueExecutions is the server's side of the queue for serve --store:
// an Execute that runs each grounding on a worker and reads its
// footprint back with exec (the server's own executor over the same
// store, which keeps serving Get, Replay, Diff and PnL locally). The
// server wires it in place of exec's Execute (see ExecutorVia).
func QueueExecutions(ctx context.Context, st *pgstore.Store, exec *execution.Executor, logger *slog.Logger) (*jobs.Queue, error) {
	return jobs.NewQueue(ctx, st.Pool(), exec, jobs.Options{Logger: logger})
}

// ExecutorVia is exec with its Execute replaced by q's: what the server's
// Executor dependency becomes when executions run on workers.
type ExecutorVia struct {
	*execution.Executor
	Queue *jobs.Queue
}

var _ server.Executor = ExecutorVia{}

// Execute runs g through the queue.
func (x ExecutorVia) Execute(ctx context.Context, g *ground.Grounded) (*execution.Footprint, error) {
	return x.Queue.Execute(ctx, g)
}
