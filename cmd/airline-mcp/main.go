// Command airline-mcp is τ-bench's airline domain as an MCP server: the
// 14 tools of sierra-research/tau-bench (commit 59a200c) ported to Go
// (package airline) over an in-memory world read from --db DIR
// (users.json, reservations.json and flights.json, as in
// shared/data/tau-airline/db). It serves newline-delimited JSON-RPC on
// stdin and stdout. The writes change the world in memory only; a new
// process starts from the files again.
//
// Tool names, descriptions and input schemas are tools.json's; a call
// answers text content exactly as τ-bench's tool returns its string
// (json.dumps of the record, or a message), and τ-bench's errors
// ("Error: …") as the same text with isError. The clock is τ-bench's
// fixed one: a booking is created at 2024-05-15T15:00:00.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/airline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "airline-mcp:", err)
		os.Exit(1)
	}
}

// errUsage is run's error for flags it cannot use (already printed).
var errUsage = errors.New("usage")

const usage = `usage: airline-mcp --db DIR

τ-bench's airline tools as an MCP server on stdio, over the world in DIR
(users.json, reservations.json, flights.json). Writes change the world in
memory only.

`

// readCloser and writeCloser close what they wrap when it closes.
type readCloser struct{ io.Reader }

func (r readCloser) Close() error {
	if c, ok := r.Reader.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

type writeCloser struct{ io.Writer }

func (w writeCloser) Close() error {
	if c, ok := w.Writer.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// run is main without the process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("airline-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	db := fs.String("db", "", "the world's `DIR`: users.json, reservations.json and flights.json")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 || *db == "" {
		if *db == "" {
			fmt.Fprintln(stderr, "airline-mcp: --db is required")
		} else {
			fmt.Fprintf(stderr, "airline-mcp: unexpected arguments %q\n", fs.Args())
		}
		fs.Usage()
		return errUsage
	}
	w, err := airline.Load(*db)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := airline.NewServer(w, &sdk.ServerOptions{Logger: log})
	if err != nil {
		return err
	}
	return s.Run(ctx, &sdk.IOTransport{Reader: readCloser{stdin}, Writer: writeCloser{stdout}})
}
