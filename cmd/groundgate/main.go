// Command groundgate is the capability registry and grounding server for
// research agents. See the README and docs/ for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// run is main without the process: testscript and tests call it.
func run(ctx context.Context, args []string) int {
	cli := &CLI{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	return cli.Main(ctx, args)
}
