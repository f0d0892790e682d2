package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/groundgate/groundgate/internal/app"
)

type serveCmd struct{}

func (serveCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("serve", "serve [--addr HOST:PORT] [--db FILE] [--data DIR]")
	addr := fs.String("addr", "127.0.0.1:8080", "listen `address`")
	db := fs.String("db", defaultDB, "bbolt database `file` (created and seeded when new)")
	data := fs.String("data", "", "data root `dir`: request data sources resolve inside it (default: the bundled sample data)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: serve takes no arguments", errUsage)
	}
	logger := slog.New(slog.NewJSONHandler(cli.Stderr, nil))
	m, err := app.Open(ctx, app.Config{Addr: *addr, DB: *db, Data: *data, AdminToken: cli.Getenv("GROUNDGATE_ADMIN_TOKEN"), Logger: logger})
	if err != nil {
		return err
	}
	return m.Run(ctx)
}
