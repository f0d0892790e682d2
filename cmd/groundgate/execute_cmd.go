package main

import (
	"context"
	"fmt"
	"os"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/server"
)

type runCmd struct{}

// run executes a grounded request. Without --grounding it grounds first,
// exactly as POST /v1/ground would; a refusal prints the problem and exits
// 1, and nothing runs.
func (runCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("run", "run [--db FILE] [--data DIR] (--grounding ID | --request FILE (--prompt TEXT | --discovery ID))")
	db := fs.String("db", defaultDB, "bbolt database `file` (created and seeded when new)")
	data := fs.String("data", "", "data root `dir` (default: the bundled sample data)")
	gid := fs.String("grounding", "", "the `id` of an admitted grounding")
	reqFile := fs.String("request", "", "a request (FPR) JSON `file` to ground first")
	prompt := fs.String("prompt", "", "the researcher's `prompt` to discover from")
	discID := fs.String("discovery", "", "the `id` of a stored discovery")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: run takes no arguments", errUsage)
	}
	if (*gid == "") == (*reqFile == "") || (*reqFile != "" && (*prompt == "") == (*discID == "")) {
		return fmt.Errorf("%w: give --grounding ID, or --request FILE with one of --prompt and --discovery", errUsage)
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
		req, err := os.ReadFile(*reqFile)
		if err != nil {
			return err
		}
		p := ground.Proposal{Request: req}
		if *discID != "" {
			if p.DiscoveryID, err = hashing.Parse(*discID); err != nil {
				return fmt.Errorf("%w: --discovery: %v", errUsage, err)
			}
		} else {
			res, err := e.Disc.Discover(ctx, discover.Query{Prompt: *prompt})
			if err != nil {
				return err
			}
			p.DiscoveryID = res.ID
		}
		out, err := e.Gate.Ground(ctx, p)
		if err != nil {
			return err
		}
		if !out.Record.Decision.Admitted {
			_, body := server.GroundingResponse(out)
			if err := cli.printJSON(body); err != nil {
				return err
			}
			fmt.Fprintf(cli.Stderr, "groundgate run: not grounded: %d failure(s); nothing ran\n", len(out.Record.Decision.Failures))
			return exitError{code: 1}
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
