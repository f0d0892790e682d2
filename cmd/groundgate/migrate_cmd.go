package main

import (
	"context"
	"fmt"

	"github.com/groundgate/groundgate/internal/app"
)

type migrateCmd struct{}

// Run copies a bbolt file into PostgreSQL + S3 and verifies the copy
// (docs/operations.md, "Migrating from one file to PostgreSQL + S3"): the
// report is printed as JSON whatever the outcome, each problem on stderr;
// the exit status is the error's kind (a refused target: conflict, 6; a
// copy that differs or a file that does not verify: corrupt, 4).
func (m *migrateCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("migrate", "migrate --from FILE --store postgres://… --blobs s3://BUCKET[/PREFIX]?endpoint=…")
	from := fs.String("from", "", "the bbolt database `file` to copy (opened read-only)")
	dsn := fs.String("store", "", "the PostgreSQL database to copy into (`postgres://…`)")
	blobs := fs.String("blobs", "", "the S3 bucket for blobs (`s3://BUCKET[/PREFIX]?endpoint=…`; credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *from == "" || *dsn == "" || *blobs == "" {
		return fmt.Errorf("%w: migrate takes --from, --store and --blobs, and no argument", errUsage)
	}
	rep, err := app.Migrate(ctx, app.MigrateConfig{From: *from, Store: *dsn, Blobs: *blobs, Env: cli.Getenv})
	var problems []string
	if rep.Source != nil {
		problems = append(problems, prefixed("SOURCE: ", rep.Source.Problems)...)
	}
	problems = append(problems, prefixed("MISMATCH: ", rep.Problems)...)
	if rep.Target != nil {
		problems = append(problems, prefixed("TARGET: ", rep.Target.Problems)...)
	}
	for _, p := range problems {
		fmt.Fprintln(cli.Stderr, p)
	}
	// The report when the command got as far as checking something; a
	// refusal before (a held file, a target with another history) is its
	// error alone.
	if err == nil || len(problems) > 0 {
		if perr := cli.printJSON(rep); err == nil {
			err = perr
		}
	}
	return err
}

func prefixed(prefix string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = prefix + l
	}
	return out
}
