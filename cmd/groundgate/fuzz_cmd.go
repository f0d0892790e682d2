package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/groundgate/groundgate/agent/llm"
	"github.com/groundgate/groundgate/fuzz"
	"github.com/groundgate/groundgate/internal/app"
)

type fuzzCmd struct{}

// Run tests the registry itself (SPEC §12) at its current version: the
// discovery text of every entry for poisoning, every capability's own
// phrases for discoverability and consistency, and (unless
// --runtime=false) every executable capability on hostile arguments and
// data, in a scratch copy of the database. It prints the report as
// JSON with --json, else a summary; it exits 0 whatever it finds (the
// findings are the output), 1 when the run itself fails.
func (fuzzCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("fuzz", "fuzz [--db FILE] [--seconds N] [--seed S] [--json] [--patch FILE] [--paraphrase-llm] [--runtime=false] [--data DIR] [--save-cases DIR]")
	db := fs.String("db", defaultDB, "bbolt database `file` (created and seeded when new)")
	seconds := fs.Int("seconds", 60, "time budget in `seconds`; a run cut short reports complete: false and keeps what it found")
	seed := fs.Uint64("seed", 1, "`seed` of the probe order: same seed, same registry version, same report (for a complete run)")
	asJSON := fs.Bool("json", false, "print the report as JSON (the shape of POST /v1/fuzz/runs's result)")
	patch := fs.String("patch", "", "write the suggestions as a registry patch to `file` (apply it with groundgate registry put FILE)")
	paraphraseLLM := fs.Bool("paraphrase-llm", false, "also ask an OpenAI-compatible endpoint (GROUNDGATE_LLM_BASE_URL, GROUNDGATE_LLM_MODEL, GROUNDGATE_LLM_API_KEY) for phrasings of each family and metric beyond the grammar; the run is then not reproducible from its seed alone")
	runtime := fs.Bool("runtime", true, "run every executable capability on hostile arguments and data (in a scratch copy of the database)")
	data := fs.String("data", "", "data root `dir` the runtime tests run on beside their generated frames (default: the bundled sample data)")
	saveCases := fs.String("save-cases", "", "write each runtime finding's minimised case as JSON into `dir` (a regression case)")
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
	cfg := fuzz.Config{Seed: *seed}
	if *paraphraseLLM {
		p, err := llm.NewParaphraser(llm.Config{BaseURL: cli.Getenv(llm.EnvBaseURL),
			Model: cli.Getenv(llm.EnvModel), APIKey: cli.Getenv(llm.EnvAPIKey), Temperature: llm.DefaultTemperature})
		if err != nil {
			return fmt.Errorf("%w: --paraphrase-llm: %v", errUsage, err)
		}
		cfg.Paraphraser = p
	}
	if *runtime {
		rt, closeRT, err := app.OpenFuzzRuntime(ctx, e.Engine, *data)
		if err != nil {
			return err
		}
		defer closeRT()
		rt.Save, cfg.Runtime = *saveCases, rt
	}
	rep, err := fuzz.Run(rctx, e.Store.Current(), e.Disc, cfg)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err // interrupted: the partial report is not printed as if whole
	}
	if *patch != "" {
		if err := writeJSONFile(*patch, rep.Patch()); err != nil {
			return err
		}
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
	if rt := rep.Runtime; rt != nil {
		fmt.Fprintf(cli.Stdout, "runtime: %d of %d cases run on %d capabilities (%d executed, %d refused by the gate, %d by the executor; %d untested)\n",
			rt.Ran, rt.Cases, rt.Capabilities, rt.Executed, rt.Refused, rt.Rejected, len(rt.Untested))
	}
	for _, k := range keys {
		fmt.Fprintf(cli.Stdout, "  %-40s %d\n", k, counts[k])
	}
	return nil
}

// writeJSONFile writes v as indented JSON to path, whole or not at all
// (through a temporary file renamed over it).
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".patch-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
