package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/internal/app"
)

type contractCmd struct{}

const contractUsage = `contract check [--db FILE] [--data DIR] [--with-data] REQUEST.json

subcommands:
  check REQUEST.json   every contract clause's verdict for a request (FPR), per morphism,
                       nothing run (the POST /v1/contracts/check body); - reads standard input`

// Run dispatches the contract subcommands; check is the only one.
func (contractCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(cli.Stderr, "usage: groundgate "+contractUsage)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	if args[0] != "check" {
		return fmt.Errorf("%w: unknown subcommand %q\n%s", errUsage, args[0], contractUsage)
	}
	fs := cli.newFlags("contract check", "contract check [--db FILE] [--data DIR] [--with-data] REQUEST.json")
	db := fs.String("db", defaultDB, "bbolt database `file` (created and seeded when new)")
	data := fs.String("data", "", "data root `dir` (default: the bundled sample data)")
	withData := fs.Bool("with-data", false, "read the request's data source and evaluate the clauses over its facts")
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: contract check takes one request file (- for standard input)", errUsage)
	}
	var raw []byte
	if pos[0] == "-" {
		raw, err = readAll(cli)
	} else {
		raw, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return err
	}
	req, fails := ground.DecodeRequest(raw)
	if len(fails) > 0 {
		msgs := make([]string, len(fails))
		for i, f := range fails {
			msgs[i] = fmt.Sprintf("%s: %s (%s)", f.Field, f.Detail, f.Code)
		}
		return fmt.Errorf("malformed request: %s", strings.Join(msgs, "; "))
	}
	e, err := app.OpenEngines(ctx, *db, *data)
	if err != nil {
		return err
	}
	defer e.Close()
	rep, err := e.Exec.CheckContracts(ctx, req, *withData)
	if err != nil {
		return err
	}
	if err := cli.printJSON(rep); err != nil {
		return err
	}
	if !rep.Holds {
		fmt.Fprintf(cli.Stderr, "groundgate contract check: %d clause verdict(s) fail, %d not evaluable\n", rep.Counts[execution.StatusFails], rep.Counts[execution.StatusNotEvaluable])
		return exitError{code: 1}
	}
	return nil
}
