package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/server"
)

type discoverCmd struct{}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func (discoverCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("discover", "discover [--db FILE] PROMPT… | --term TERM…")
	db := fs.String("db", defaultDB, "bbolt database `file` (created and seeded when new)")
	var terms stringList
	fs.Var(&terms, "term", "an explicit `term` instead of a prompt (repeatable)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	q := discover.Query{Prompt: strings.Join(pos, " "), Terms: terms}
	if (q.Prompt == "") == (len(terms) == 0) {
		return fmt.Errorf("%w: give a prompt or --term, not both and not neither", errUsage)
	}
	e, err := app.OpenEngines(ctx, *db, "")
	if err != nil {
		return err
	}
	defer e.Close()
	res, err := e.Disc.Discover(ctx, q)
	if err != nil {
		return err
	}
	return cli.printJSON(res)
}

type groundCmd struct{}

func (groundCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("ground", "ground [--db FILE] [--repair rules|none] --request FILE (--discovery ID | --evidence FILE | --prompt TEXT)")
	db := fs.String("db", defaultDB, "bbolt database `file` (created and seeded when new)")
	reqFile := fs.String("request", "", "the request (FPR) JSON `file`; - reads standard input")
	discID := fs.String("discovery", "", "the `id` of a stored discovery")
	evFile := fs.String("evidence", "", "a `file` holding full discovery evidence")
	prompt := fs.String("prompt", "", "discover this `prompt` first and ground against its evidence")
	repair := fs.String("repair", "rules", "what may fix a refused pipeline step: `rules` (the named repair rules) or none")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *reqFile == "" {
		return fmt.Errorf("%w: ground needs --request FILE and no arguments", errUsage)
	}
	if !exactlyOne(*discID, *evFile, *prompt) {
		return fmt.Errorf("%w: give exactly one of --discovery, --evidence, --prompt", errUsage)
	}
	e, err := app.OpenEngines(ctx, *db, "")
	if err != nil {
		return err
	}
	defer e.Close()
	out, err := groundFromFlags(ctx, cli, e, *reqFile, *discID, *evFile, *prompt, *repair)
	if err != nil {
		return err
	}
	if !out.Record.Decision.Admitted {
		return refuse(cli, "ground", out, "")
	}
	_, body := server.GroundingResponse(out)
	return cli.printJSON(body)
}

// groundFromFlags runs Γ on the request in reqFile ("-" for standard
// input) with the evidence the flags name: a stored discovery id, a file
// of inline evidence, or a prompt discovered now. Exactly one of discID,
// evFile and prompt is set.
func groundFromFlags(ctx context.Context, cli *CLI, e *app.Engines, reqFile, discID, evFile, prompt, repair string) (ground.Outcome, error) {
	mode, err := ground.ParseRepairMode(repair)
	if err != nil {
		return ground.Outcome{}, fmt.Errorf("%w: --repair: %v", errUsage, err)
	}
	var req []byte
	if reqFile == "-" {
		req, err = readAll(cli)
	} else {
		req, err = os.ReadFile(reqFile)
	}
	if err != nil {
		return ground.Outcome{}, err
	}
	p := ground.Proposal{Request: req, Repair: mode}
	switch {
	case discID != "":
		if p.DiscoveryID, err = hashing.Parse(discID); err != nil {
			return ground.Outcome{}, fmt.Errorf("%w: --discovery: %v", errUsage, err)
		}
	case evFile != "":
		if p.Inline, err = os.ReadFile(evFile); err != nil {
			return ground.Outcome{}, err
		}
	default:
		res, err := e.Disc.Discover(ctx, discover.Query{Prompt: prompt})
		if err != nil {
			return ground.Outcome{}, err
		}
		p.DiscoveryID = res.ID
	}
	return e.Gate.Ground(ctx, p)
}

// refuse prints Γ's refusal as POST /v1/ground's 422 body and exits 1.
func refuse(cli *CLI, cmd string, out ground.Outcome, consequence string) error {
	_, body := server.GroundingResponse(out)
	if err := cli.printJSON(body); err != nil {
		return err
	}
	fmt.Fprintf(cli.Stderr, "groundgate %s: not grounded: %d failure(s)%s\n", cmd, len(out.Record.Decision.Failures), consequence)
	return exitError{code: 1}
}

// exactlyOne reports whether exactly one of the flag values is set.
func exactlyOne(vals ...string) bool {
	n := 0
	for _, v := range vals {
		if v != "" {
			n++
		}
	}
	return n == 1
}

func readAll(cli *CLI) ([]byte, error) { return io.ReadAll(io.LimitReader(cli.Stdin, 1<<20)) }
