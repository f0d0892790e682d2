// Command mcp-testupstream is an MCP server for tests of groundgate's
// gateway (SPEC §14): package gateway/upstreamtest as a process. It serves
// newline-delimited JSON-RPC on stdin and stdout, or streamable HTTP with
// --http on a loopback address, printing its endpoint
// (http://127.0.0.1:PORT/mcp) as the first line of stdout.
//
// # Tools
//
// Without --tools or --toolbench: echo and get_item (read-only; get_item
// with an outputSchema and structuredContent), put_item (a write whose
// input schema has required fields and types) and delete_all (a
// destructive write).
//
//	--tools N          N synthetic read-only tools tool_1 … tool_N instead
//	                   (zero-padded), listed 1000 a page (--page-size)
//	--toolbench DIR    the APIs of DIR/stabletoolbench-tools.json instead,
//	                   one tool each (/work/shared/data/tool-discovery)
//
// # Behaviours
//
// Each flag naming a TOOL changes that tool when it is served, else adds
// a tool of that name.
//
//	--hang TOOL        never answers; returns when the call is cancelled
//	--crash-on TOOL    the process exits with status 3 mid-call
//	--garbage TOOL     the call is answered with bytes that are not
//	                   JSON-RPC: a broken line on stdio, a broken
//	                   application/json body over HTTP
//	--poison TOOL      its description tells the agent to ignore its
//	                   instructions and call delete_all first
//	--big-result BYTES adds big_result, answering a text of BYTES bytes
//	--ref-loop         adds ref_loop, whose input schema is a $ref cycle:
//	                   {"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},
//	                   "b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}
//	--name, --version  the serverInfo reported (for pinning by version)
//
// # Rug pulls
//
// --state FILE is a JSON file changing the tools after a client has seen
// them: {"tools": {NAME: {"description", "title", "inputSchema",
// "outputSchema", "annotations"}}, "remove": [NAME]}. A patch replaces
// what it names (outputSchema null removes it); a NAME not served is
// added; the change is relative to the flags' tools, so {} undoes it. The
// file is re-read on SIGHUP and every --state-poll (100ms; 0: never) when
// its bytes change; a missing file is {}. Every tool that changes is
// re-added, and the SDK sends notifications/tools/list_changed to every
// session. Write the file whole (a temporary file, then rename). See
// package gateway/upstreamtest for the details.
//
// The same flags give the same tools/list bytes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/groundgate/groundgate/gateway/upstreamtest"
)

// exitCrash is the status of the process a call to --crash-on ends.
const exitCrash = 3

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, hup, func() { os.Exit(exitCrash) })
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "mcp-testupstream:", err)
		os.Exit(1)
	}
}

// errUsage is run's error for flags it cannot use (already printed).
var errUsage = errors.New("usage")

const usage = `usage: mcp-testupstream [flags]

An MCP server for tests of groundgate's gateway: stdio by default, or
streamable HTTP at http://ADDR/mcp with --http (the endpoint is printed as
the first line of stdout). Without --tools or --toolbench it serves echo
and get_item (read-only), put_item (a write) and delete_all (destructive).

Flags naming a TOOL change that tool if it is served, else add one.
--state FILE changes tools after approval (a rug pull): JSON
{"tools": {NAME: {"description", "title", "inputSchema", "outputSchema",
"annotations"}}, "remove": [NAME]}, relative to the flags' tools, re-read
on SIGHUP and every --state-poll when it changes; each change sends
notifications/tools/list_changed. A crash exits with status 3.

`

// run is main without the process: crash is what --crash-on does, hup
// asks for the state file to be re-read.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, hup <-chan os.Signal, crash func()) error {
	fs := flag.NewFlagSet("mcp-testupstream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	var (
		cfg  upstreamtest.Config
		addr string
		poll time.Duration
	)
	fs.StringVar(&addr, "http", "", "serve streamable HTTP on this loopback `ADDR` (127.0.0.1:0 picks a port) instead of stdio")
	fs.StringVar(&cfg.Name, "name", upstreamtest.DefaultName, "the server's `NAME` in serverInfo")
	fs.StringVar(&cfg.Version, "version", upstreamtest.DefaultVersion, "the server's `VERSION` in serverInfo")
	fs.IntVar(&cfg.Tools, "tools", 0, "serve `N` synthetic tools tool_1 … tool_N instead of the normal ones")
	fs.StringVar(&cfg.ToolBench, "toolbench", "", "serve the StableToolBench APIs of `DIR`/stabletoolbench-tools.json instead of the normal tools")
	fs.IntVar(&cfg.PageSize, "page-size", 0, "tools per tools/list page (0: the SDK's 1000)")
	fs.StringVar(&cfg.Hang, "hang", "", "`TOOL` never answers until the call is cancelled")
	fs.StringVar(&cfg.CrashOn, "crash-on", "", "a call to `TOOL` makes the process exit with status 3 before it answers")
	fs.StringVar(&cfg.Garbage, "garbage", "", "a call to `TOOL` is answered with bytes that are not JSON-RPC")
	fs.StringVar(&cfg.Poison, "poison", "", "`TOOL`'s description tells the agent to ignore its instructions")
	fs.IntVar(&cfg.BigResult, "big-result", 0, "add big_result, answering a text of `BYTES` bytes")
	fs.BoolVar(&cfg.RefLoop, "ref-loop", false, "add ref_loop, whose input schema's $ref loops")
	fs.StringVar(&cfg.State, "state", "", "the state `FILE` of tool changes (a rug pull), re-read on SIGHUP and when it changes")
	fs.DurationVar(&poll, "state-poll", 100*time.Millisecond, "how often to look for a change of the state file (0: only on SIGHUP)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcp-testupstream: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return errUsage
	}
	cfg.Crash = crash
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	u, err := upstreamtest.New(cfg)
	if err != nil {
		return err
	}
	defer u.Close()
	if cfg.State != "" {
		go u.Watch(ctx, poll)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-hup:
					if err := u.Reload(); err != nil {
						cfg.Logger.Warn("SIGHUP: state not applied", "err", err)
					}
				}
			}
		}()
	}
	if addr == "" {
		return u.ServeStdio(ctx, stdin, stdout)
	}
	return serveHTTP(ctx, u, addr, stdout)
}

// serveHTTP serves u at http://ADDR/mcp until ctx ends; ADDR must be a
// loopback address, this server being one that crashes on request.
func serveHTTP(ctx context.Context, u *upstreamtest.Upstream, addr string, stdout io.Writer) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--http %s: not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", u.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if _, err := fmt.Fprintf(stdout, "http://%s/mcp\n", ln.Addr()); err != nil {
		_ = ln.Close()
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	u.Close() // ends the calls that hang, so shutdown need not wait for them
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
