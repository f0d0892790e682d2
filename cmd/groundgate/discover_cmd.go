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
	fs := cli.newFlags("ground", "ground [--db FILE] --request FILE (--discovery ID | --evidence FILE | --prompt TEXT)")
	db := fs.String("db", defaultDB, "bbolt database `file` (created and seeded when new)")
	reqFile := fs.String("request", "", "the request (FPR) JSON `file`; - reads standard input")
	discID := fs.String("discovery", "", "the `id` of a stored discovery")
	evFile := fs.String("evidence", "", "a `file` holding full discovery evidence")
	prompt := fs.String("prompt", "", "discover this `prompt` first and ground against its evidence")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *reqFile == "" {
		return fmt.Errorf("%w: ground needs --request FILE and no arguments", errUsage)
	}
	given := 0
	for _, s := range []string{*discID, *evFile, *prompt} {
		if s != "" {
			given++
		}
	}
	if given != 1 {
		return fmt.Errorf("%w: give exactly one of --discovery, --evidence, --prompt", errUsage)
	}
	var req []byte
	if *reqFile == "-" {
		req, err = readAll(cli)
	} else {
		req, err = os.ReadFile(*reqFile)
	}
	if err != nil {
		return err
	}
	e, err := app.OpenEngines(ctx, *db, "")
	if err != nil {
		return err
	}
	defer e.Close()

	p := ground.Proposal{Request: req}
	switch {
	case *discID != "":
		if p.DiscoveryID, err = hashing.Parse(*discID); err != nil {
			return fmt.Errorf("%w: --discovery: %v", errUsage, err)
		}
	case *evFile != "":
		if p.Inline, err = os.ReadFile(*evFile); err != nil {
			return err
		}
	default:
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
	status, body := server.GroundingResponse(out)
	if err := cli.printJSON(body); err != nil {
		return err
	}
	if status != 200 {
		fmt.Fprintf(cli.Stderr, "groundgate ground: not grounded: %d failure(s)\n", len(out.Record.Decision.Failures))
		return exitError{code: 1}
	}
	return nil
}

func readAll(cli *CLI) ([]byte, error) { return io.ReadAll(io.LimitReader(cli.Stdin, 1<<20)) }
