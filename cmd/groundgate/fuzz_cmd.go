package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/groundgate/groundgate/fuzz"
	"github.com/groundgate/groundgate/internal/app"
)

type fuzzCmd struct{}

// Run tests the registry itself (SPEC §12) at its current version: the
// discovery text of every entry for poisoning, every capability's own
// phrases for discoverability and consistency. It prints the report as
// JSON with --json, else a summary; it exits 0 whatever it finds (the
// findings are the output), 1 when the run itself fails.
func (fuzzCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("fuzz", "fuzz [--db FILE] [--seconds N] [--seed S] [--json]")
	db := fs.String("db", defaultDB, "bbolt database `file` (created and seeded when new)")
	seconds := fs.Int("seconds", 60, "time budget in `seconds`; a run cut short reports complete: false and keeps what it found")
	seed := fs.Uint64("seed", 1, "`seed` of the probe order: same seed, same registry version, same report (for a complete run)")
	asJSON := fs.Bool("json", false, "print the report as JSON (the shape of POST /v1/fuzz/runs's result)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *seconds <= 0 {
		return fmt.Errorf("%w: fuzz takes no arguments and a positive --seconds", errUsage)
	}
	e, err := app.OpenEngines(ctx, *db, "")
	if err != nil {
		return err
	}
	defer e.Close()
	rctx, cancel := context.WithTimeout(ctx, time.Duration(*seconds)*time.Second)
	defer cancel()
	rep, err := fuzz.Run(rctx, e.Store.Current(), e.Disc, fuzz.Config{Seed: *seed})
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err // interrupted: the partial report is not printed as if whole
	}
	if *asJSON {
		return cli.printJSON(rep)
	}
	counts := map[string]int{}
	for _, f := range rep.Findings {
		counts[f.Kind+"/"+f.Rule]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(cli.Stdout, "registry %s (version %d), seed %d: %d of %d discovery probes asked (complete: %v), %d findings\n",
		rep.Registry, rep.Version, rep.Seed, rep.Asked, rep.Probes, rep.Complete, len(rep.Findings))
	for _, k := range keys {
		fmt.Fprintf(cli.Stdout, "  %-40s %d\n", k, counts[k])
	}
	return nil
}
