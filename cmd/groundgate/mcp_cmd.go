package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/mcp"
)

type mcpCmd struct{}

// Run serves MCP on standard input and output until the client closes its
// end or ctx ends. Logs go to standard error: standard output is the
// protocol's.
func (mcpCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("mcp", "mcp [--db FILE] [--data DIR] [--session WORDS]")
	db := fs.String("db", defaultDB, "bbolt database `file` (created and seeded when new)")
	data := fs.String("data", "", "data root `dir`: request data sources resolve inside it (default: the bundled sample data)")
	words := fs.String("session", "", "open an agent_discovery session on these `words` (recorded as the agent's) and serve its tools: the upstream tools they ground, the exempt reads, and discover")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: mcp takes no arguments", errUsage)
	}
	logger := slog.New(slog.NewJSONHandler(cli.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e, err := app.OpenEngines(ctx, *db, *data)
	if err != nil {
		return err
	}
	defer e.Close()
	var s *sdk.Server
	if *words != "" {
		var id hashing.Digest
		if s, id, err = e.MCPSession(ctx, logger, *words); err != nil {
			return err
		}
		fmt.Fprintf(cli.Stderr, "groundgate mcp: session %s (agent discovery)\n", id)
	} else if s, err = e.MCP(logger); err != nil {
		return err
	}
	err = s.Run(ctx, mcp.Stdio(cli.Stdin, cli.Stdout))
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil // the client hung up, or we were told to stop
	}
	return fmt.Errorf("mcp: %w", err)
}
