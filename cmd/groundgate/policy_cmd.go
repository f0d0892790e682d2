package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/policy/smt"
)

type policyCmd struct{}

const policyUsage = `policy SUBCOMMAND [flags]

subcommands:
  lint [--solver z3|cvc5] FILE        analyse the policies in FILE: vacuous, tautological, redundant
                                      named assertions, unbound constants, conflicts (exit 1 if any)
  diff [--solver z3|cvc5] OLD NEW     a request admitted by one policy file and refused by the other,
                                      or a proof there is none (exit 1 when they differ)
  put [--db FILE] [--solver …] FILE   add or replace the policies in FILE in the database
  delete [--db FILE] NAME             remove a policy from the set in force
  list [--db FILE]                    the set in force (the GET /v1/policies body)

A policy file holds one policy ({"smtlib", "bind", "allow", "applies_to"}, named after the
file) or a set ({"NAME": POLICY, …}). See docs/policies.md.`

func (policyCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(cli.Stderr, "usage: groundgate "+policyUsage)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	switch args[0] {
	case "lint":
		return policyLint(ctx, cli, args[1:])
	case "diff":
		return policyDiff(ctx, cli, args[1:])
	case "put":
		return policyPut(ctx, cli, args[1:])
	case "delete":
		return policyDelete(ctx, cli, args[1:])
	case "list":
		return policyList(ctx, cli, args[1:])
	}
	return fmt.Errorf("%w: unknown subcommand %q\n%s", errUsage, args[0], policyUsage)
}

// readPolicyFile reads and compiles a policy file (- is standard input).
func readPolicyFile(cli *CLI, path string) ([]*policy.Compiled, error) {
	var (
		raw []byte
		err error
	)
	if path == "-" {
		raw, err = io.ReadAll(io.LimitReader(cli.Stdin, policy.MaxFileBytes+1))
	} else {
		raw, err = readLimited(path, policy.MaxFileBytes+1)
	}
	if err != nil {
		return nil, err
	}
	return policy.ParseFile(path, raw)
}

func readLimited(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// checker starts a one-process solver pool; stop closes it.
func checker(name string) (*policy.Checker, func(), error) {
	sv, err := app.SolverByName(name)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := sv.Available(); err != nil {
		return nil, nil, err
	}
	pool := smt.NewPool(sv, 1)
	return policy.NewChecker(pool, 0), func() { pool.Close() }, nil
}

func policyLint(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("policy lint", "policy lint [--solver z3|cvc5] FILE")
	solver := fs.String("solver", "z3", "SMT `solver`: z3 or cvc5")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: policy lint takes one policy file", errUsage)
	}
	cs, err := readPolicyFile(cli, pos[0])
	if err != nil {
		return err
	}
	k, stop, err := checker(*solver)
	if err != nil {
		return err
	}
	defer stop()
	reps, err := k.LintSet(ctx, cs)
	if err != nil {
		return err
	}
	if err := cli.printJSON(reps); err != nil {
		return err
	}
	dirty := 0
	for _, r := range reps {
		if !r.Clean {
			dirty++
		}
	}
	if dirty > 0 {
		fmt.Fprintf(cli.Stderr, "groundgate policy lint: %d of %d policies have findings\n", dirty, len(reps))
		return exitError{code: 1}
	}
	return nil
}

func policyDiff(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("policy diff", "policy diff [--solver z3|cvc5] OLD NEW")
	solver := fs.String("solver", "z3", "SMT `solver`: z3 or cvc5")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("%w: policy diff takes two policy files", errUsage)
	}
	oldSet, err := readPolicyFile(cli, pos[0])
	if err != nil {
		return err
	}
	newSet, err := readPolicyFile(cli, pos[1])
	if err != nil {
		return err
	}
	k, stop, err := checker(*solver)
	if err != nil {
		return err
	}
	defer stop()
	res, err := k.Diff(ctx, oldSet, newSet)
	if err != nil {
		return err
	}
	if err := cli.printJSON(res); err != nil {
		return err
	}
	if !res.Equivalent {
		return exitError{code: 1}
	}
	return nil
}

func policyPut(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("policy put", "policy put [--db FILE] [--solver z3|cvc5] FILE")
	db := fs.String("db", defaultDB, "bbolt database `file` (created and seeded when new)")
	solver := fs.String("solver", "z3", "SMT `solver` that reads each policy before it is stored: z3 or cvc5")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: policy put takes one policy file", errUsage)
	}
	cs, err := readPolicyFile(cli, pos[0])
	if err != nil {
		return err
	}
	store, err := app.OpenRegistry(ctx, *db, app.OpenWrite)
	if err != nil {
		return err
	}
	defer store.Close()
	ps, pool, k, err := app.OpenPolicies(ctx, store, *solver, 0)
	if err != nil {
		return err
	}
	defer pool.Close()
	for _, c := range cs {
		if err := c.CheckRegistry(store.Current()); err != nil {
			return err
		}
		if err := k.Validate(ctx, c); err != nil {
			return err
		}
	}
	for _, c := range cs {
		res, err := ps.Put(ctx, c)
		if err != nil {
			return err
		}
		fmt.Fprintf(cli.Stderr, "policy %s %s (version %d)\n", c.Name, map[bool]string{true: "stored", false: "unchanged"}[res.Changed], res.Version)
	}
	return cli.printJSON(ps.Current().Body())
}

func policyDelete(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("policy delete", "policy delete [--db FILE] NAME")
	db := fs.String("db", defaultDB, "bbolt database `file`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: policy delete takes one policy name", errUsage)
	}
	ps, done, err := openPolicyStore(ctx, *db, app.OpenWrite)
	if err != nil {
		return err
	}
	defer done()
	if _, err := ps.Delete(ctx, pos[0]); err != nil {
		return err
	}
	return cli.printJSON(ps.Current().Body())
}

func policyList(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("policy list", "policy list [--db FILE]")
	db := fs.String("db", defaultDB, "bbolt database `file`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: policy list takes no arguments", errUsage)
	}
	ps, done, err := openPolicyStore(ctx, *db, app.OpenReadOnly)
	if err != nil {
		return err
	}
	defer done()
	return cli.printJSON(ps.Current().Body())
}

// openPolicyStore opens the policy store in the database file; done
// closes the file.
func openPolicyStore(ctx context.Context, db string, mode app.OpenMode) (*policy.Store, func(), error) {
	store, err := app.OpenRegistry(ctx, db, mode)
	if err != nil {
		return nil, nil, err
	}
	ps, err := policy.OpenStore(ctx, store.Engine(), nil)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return ps, func() { store.Close() }, nil
}
