package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/groundgate/groundgate/agent/llm"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/gcfloor"
	"github.com/groundgate/groundgate/internal/logbuf"
	"github.com/groundgate/groundgate/policy"
)

type serveCmd struct{}

func (serveCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("serve", "serve [--addr HOST:PORT] [--db FILE | --store DSN --blobs URL] [--key FILE] [--data DIR] [--max-cells N] [--max-held-bytes N] [--max-executions N] [--max-queued N] [--solver z3|cvc5] [--policy-timeout D] [--clock RFC3339] [--refuse-poisoned-disc] [--repair-llm [--repair-llm-proposals N] [--repair-llm-timeout D]]")
	addr := fs.String("addr", "127.0.0.1:8080", "listen `address`")
	where := addStoreFlags(fs, "bbolt database `file` (created and seeded when new)")
	data := fs.String("data", "", "data root `dir`: request data sources resolve inside it (default: the bundled sample data)")
	key := fs.String("key", "", keyUsage)
	maxCells := fs.Int64("max-cells", execution.DefaultMaxCells, "work budget of one execution in `cells` (admissible morphisms × data rows × data columns); larger grids are refused with 422")
	maxHeld := fs.Int64("max-held-bytes", execution.DefaultMaxHeldBytes, "series one execution may hold until it scores, in `bytes`; larger grids are refused with 422")
	maxRunning := fs.Int("max-executions", execution.DefaultMaxConcurrent, "executions and replays running at once (`n`)")
	maxQueued := fs.Int("max-queued", execution.DefaultMaxQueued, "executions waiting for a slot (`n`); beyond it, 503 with Retry-After")
	solver := fs.String("solver", "z3", "SMT `solver` that checks policies: z3 or cvc5 (needed once a policy is stored)")
	policyTimeout := fs.Duration("policy-timeout", policy.DefaultTimeout, "bound on one policy solver query (`duration`); past it the request is refused")
	clock := fs.String("clock", "", "fix the clock calls in sessions are decided by (`RFC3339` time, e.g. 2024-05-15T15:00:00-05:00): rules that read now read this; for tests and benchmarks (default: the system clock)")
	refusePoisoned := fs.Bool("refuse-poisoned-disc", false, "refuse registry writes whose discovery text (name, aliases, tags, description, examples) addresses agents, hides characters or holds links — the tool-poisoning attack; see docs/operations.md")
	repairLLM := fs.Bool("repair-llm", false, "let a grounding ask for \"repair\": \"llm\": an OpenAI-compatible endpoint (GROUNDGATE_LLM_BASE_URL, GROUNDGATE_LLM_MODEL, GROUNDGATE_LLM_API_KEY) fixes refused pipeline step parameters the rules cannot, each proposal checked by the gate again")
	repairProposals := fs.Int("repair-llm-proposals", 2, "LLM repair proposals one grounding may ask for (`n`)")
	repairTimeout := fs.Duration("repair-llm-timeout", 30*time.Second, "bound on one grounding's LLM repair (`duration`)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: serve takes no arguments", errUsage)
	}
	shared, err := where.shared()
	if err != nil {
		return err
	}
	db := *where.db
	if shared {
		if *key == "" {
			return fmt.Errorf("%w: a shared store needs --key FILE: there is no database file to keep the attestation key beside, and every server sharing the store must sign with the same key", errUsage)
		}
		db = ""
	}
	if *policyTimeout <= 0 {
		return fmt.Errorf("%w: --policy-timeout must be positive", errUsage)
	}
	var fixed time.Time
	if *clock != "" {
		if fixed, err = time.Parse(time.RFC3339, *clock); err != nil {
			return fmt.Errorf("%w: --clock: %v", errUsage, err)
		}
	}
	// One write per request line would cost a system call each; the
	// lines are batched instead (at most logbuf.Interval late, warnings
	// and errors at once) and written out before serve returns.
	logs := logbuf.New(cli.Stderr, logbuf.Interval)
	defer logs.Close()
	logger := slog.New(logbuf.Handler(slog.NewJSONHandler(logs, nil), logs))
	// A small live heap would be collected every few hundred requests
	// (see internal/gcfloor); GOGC in the environment is the operator's.
	if cli.Getenv("GOGC") == "" {
		defer gcfloor.Start(gcfloor.DefaultFloor)()
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"max-cells", *maxCells}, {"max-held-bytes", *maxHeld}, {"max-executions", int64(*maxRunning)}, {"max-queued", int64(*maxQueued)}} {
		if f.v <= 0 {
			return fmt.Errorf("%w: --%s must be positive", errUsage, f.name)
		}
	}
	cfg := app.Config{Addr: *addr, DB: db, Store: *where.store, Blobs: *where.blobs, Env: cli.Getenv, Data: *data, KeyFile: *key, AdminToken: cli.Getenv("GROUNDGATE_ADMIN_TOKEN"), Logger: logger,
		Exec:   execution.Options{MaxCells: *maxCells, MaxHeldBytes: *maxHeld, MaxConcurrent: *maxRunning, MaxQueued: *maxQueued},
		Solver: *solver, PolicyTimeout: *policyTimeout, RefusePoisonedDisc: *refusePoisoned, Clock: fixed}
	if *repairLLM {
		if *repairProposals <= 0 || *repairTimeout <= 0 {
			return fmt.Errorf("%w: --repair-llm-proposals and --repair-llm-timeout must be positive", errUsage)
		}
		adv, err := llm.NewAdvisor(llm.Config{BaseURL: cli.Getenv(llm.EnvBaseURL),
			Model: cli.Getenv(llm.EnvModel), APIKey: cli.Getenv(llm.EnvAPIKey), Temperature: 0, MaxAttempts: 1})
		if err != nil {
			return fmt.Errorf("%w: --repair-llm: %v", errUsage, err)
		}
		cfg.Advisor, cfg.AdviceBudget = adv, ground.AdviceBudget{Proposals: *repairProposals, Timeout: *repairTimeout}
	}
	m, err := app.Open(ctx, cfg)
	if err != nil {
		return err
	}
	return m.Run(ctx)
}
