package main

import (
	"context"
	"fmt"

	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/app"
)

type runCmd struct{}

// run executes a grounded request. Without --grounding it grounds first,
// exactly as POST /v1/ground would; a refusal prints the problem and exits
// 1, and nothing runs.
func (runCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("run", "run [--db FILE] [--data DIR] (--grounding ID | [--repair rules|none] --request FILE (--discovery ID | --evidence FILE | --prompt TEXT))")
	db := fs.String("db", defaultDB, "bbolt database `file` (created and seeded when new)")
	data := fs.String("data", "", "data root `dir` (default: the bundled sample data)")
	gid := fs.String("grounding", "", "the `id` of an admitted grounding")
	reqFile := fs.String("request", "", "a request (FPR) JSON `file` to ground first; - reads standard input")
	discID := fs.String("discovery", "", "the `id` of a stored discovery")
	evFile := fs.String("evidence", "", "a `file` holding full discovery evidence")
	prompt := fs.String("prompt", "", "the researcher's `prompt` to discover from")
	repair := fs.String("repair", "rules", "what may fix a refused pipeline step: `rules` (the named repair rules) or none")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: run takes no arguments", errUsage)
	}
	if !exactlyOne(*gid, *reqFile) || (*reqFile != "" && !exactlyOne(*discID, *evFile, *prompt)) {
		return fmt.Errorf("%w: give --grounding ID, or --request FILE with one of --discovery, --evidence and --prompt", errUsage)
	}
	e, err := app.OpenEngines(ctx, *db, *data)
	if err != nil {
		return err
	}
	defer e.Close()

	var g *ground.Grounded
	if *gid != "" {
		id, err := hashing.Parse(*gid)
		if err != nil {
			return fmt.Errorf("%w: --grounding: %v", errUsage, err)
		}
		if g, err = e.Gate.Load(ctx, id); err != nil {
			return err
		}
	} else {
		out, err := groundFromFlags(ctx, cli, e, *reqFile, *discID, *evFile, *prompt, *repair)
		if err != nil {
			return err
		}
		if !out.Record.Decision.Admitted {
			return refuse(cli, "run", out, "; nothing ran")
		}
		g = out.Grounded
	}
	fp, err := e.Exec.Execute(ctx, g)
	if err != nil {
		return err
	}
	return cli.printJSON(fp)
}

type replayCmd struct{}

func (replayCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("replay", "replay [--db FILE] HASH")
	db := fs.String("db", defaultDB, "bbolt database `file`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: replay takes one execution hash", errUsage)
	}
	h, err := hashing.Parse(pos[0])
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	e, err := app.OpenEngines(ctx, *db, "")
	if err != nil {
		return err
	}
	defer e.Close()
	rep, err := e.Exec.Replay(ctx, h)
	if err != nil {
		return err
	}
	if err := cli.printJSON(rep); err != nil {
		return err
	}
	if !rep.Match {
		fmt.Fprintln(cli.Stderr, "groundgate replay: the replay differs from the stored footprint")
		return exitError{code: 1}
	}
	return nil
}

type diffCmd struct{}

func (diffCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("diff", "diff [--db FILE] HASH_A HASH_B")
	db := fs.String("db", defaultDB, "bbolt database `file`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("%w: diff takes two execution hashes", errUsage)
	}
	var hs [2]hashing.Digest
	for i, p := range pos {
		if hs[i], err = hashing.Parse(p); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	e, err := app.OpenEngines(ctx, *db, "")
	if err != nil {
		return err
	}
	defer e.Close()
	rep, err := e.Exec.Diff(ctx, hs[0], hs[1])
	if err != nil {
		return err
	}
	return cli.printJSON(rep)
}
