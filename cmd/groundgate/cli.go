package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/registry"
)

// CLI holds the process's streams and environment, so that commands never
// touch globals and tests can run them in-process.
type CLI struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

// command is one subcommand: a small struct with a Run method.
type command interface {
	Run(ctx context.Context, cli *CLI, args []string) error
}

type commandSpec struct {
	name, summary string
	new           func() command
}

func commands() []commandSpec {
	return []commandSpec{
		{"serve", "run the REST server (and MCP at /mcp)", func() command { return &serveCmd{} }},
		{"worker", "run executions and fuzz runs from the shared store's job queue (serve --store …)", func() command { return &workerCmd{} }},
		{"mcp", "serve the Model Context Protocol on standard input and output, for agent hosts", func() command { return &mcpCmd{} }},
		{"registry", "export, verify and inspect the capability registry", func() command { return &registryCmd{} }},
		{"discover", "discover capabilities in a prompt", func() command { return &discoverCmd{} }},
		{"ground", "check a request against discovery evidence (the gate)", func() command { return &groundCmd{} }},
		{"run", "execute a grounded request and print its footprint", func() command { return &runCmd{} }},
		{"replay", "re-run a stored execution and compare every layer", func() command { return &replayCmd{} }},
		{"fuzz", "test the registry itself: poisoned, undiscoverable and inconsistent entries", func() command { return &fuzzCmd{} }},
		{"diff", "compare two executions layer by layer", func() command { return &diffCmd{} }},
		{"attest", "print the signed attestation (DSSE, in-toto) of a stored execution", func() command { return &attestCmd{} }},
		{"verify-attestation", "verify an execution or call attestation offline", func() command { return &verifyAttestationCmd{} }},
		{"contract", "check a request against the capabilities' contracts (dry run)", func() command { return &contractCmd{} }},
		{"policy", "lint, diff, store and list solver-checked policies", func() command { return &policyCmd{} }},
		{"migrate", "copy a bbolt file into PostgreSQL + S3 and verify the copy", func() command { return &migrateCmd{} }},
		{"upstream", "configure, inspect and sync a running server's upstream MCP servers (the gateway)", func() command { return &upstreamCmd{} }},
	}
}

// errUsage marks errors that should print usage and exit 2.
var errUsage = errors.New("usage")

// exitError carries a specific exit code with an already-printed message.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// exitCodes is a failed command's exit status by the kind of its error
// (docs/operations.md, "Exit status"): a script can tell "not there" from
// "try again later" from "refused" without reading the message. 1 is a
// failure of no kind (and a check that found problems); 2 is a usage
// error.
var exitCodes = map[errkind.Kind]int{
	errkind.Unknown:      1,
	errkind.NotFound:     3,
	errkind.Corrupt:      4,
	errkind.Invalid:      5,
	errkind.Conflict:     6,
	errkind.Busy:         7,
	errkind.Unavailable:  8,
	errkind.Refused:      9,
	errkind.Unauthorized: 10,
	errkind.TooLarge:     11,
}

// Main runs a command line and returns the process exit code: 0 on success,
// 2 on a usage error, else the code of the error's kind (exitCodes).
func (c *CLI) Main(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		c.usage(c.Stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, spec := range commands() {
		if spec.name != args[0] {
			continue
		}
		err := spec.new().Run(ctx, c, args[1:])
		var ee exitError
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, &ee):
			return ee.code
		case errors.Is(err, errUsage):
			fmt.Fprintf(c.Stderr, "groundgate %s: %v\n", args[0], err)
			return 2
		default:
			fmt.Fprintf(c.Stderr, "groundgate %s: %v\n", args[0], err)
			return exitCodes[errkind.Of(err)]
		}
	}
	fmt.Fprintf(c.Stderr, "groundgate: unknown command %q\n\n", args[0])
	c.usage(c.Stderr)
	return 2
}

func (c *CLI) usage(w io.Writer) {
	fmt.Fprintln(w, "usage: groundgate <command> [flags] [args]")
	fmt.Fprintln(w)
	for _, s := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", s.name, s.summary)
	}
	fmt.Fprintln(w, "\nRun 'groundgate <command> -h' for a command's flags.")
	fmt.Fprintln(w, "Exit status: 0 ok; 1 failed (or a check found problems); 2 usage; 3 not found, 4 corrupt,")
	fmt.Fprintln(w, "5 invalid, 6 conflict, 7 busy, 8 unavailable, 9 refused, 10 unauthorized, 11 too large.")
}

// newFlags returns a FlagSet that reports errors instead of exiting.
func (c *CLI) newFlags(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(c.Stderr, "usage: groundgate %s\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags, accepting them before and after positional
// arguments (Go's flag package stops at the first positional one).
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// printJSON writes v as indented JSON followed by a newline.
func (c *CLI) printJSON(v any) error {
	enc := json.NewEncoder(c.Stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// defaultDB is the bbolt file used when --db is not given.
const defaultDB = "groundgate.db"

func sortedKinds(m map[registry.Kind]int) []registry.Kind {
	ks := make([]registry.Kind, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}
