package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/server"
)

// Config is everything the server process needs; nothing is read from
// globals.
type Config struct {
	Addr       string // listen address; "127.0.0.1:0" picks a free port
	DB         string // bbolt file, created and seeded when new
	Data       string // data root: sources resolve inside it; "" means the bundled sample data
	AdminToken string // registry write token; empty refuses writes
	Logger     *slog.Logger
	// ShutdownTimeout bounds the wait for in-flight requests.
	ShutdownTimeout time.Duration
}

// Main is the wired server: store, discovery, gate and HTTP, opened from a
// Config. Tests run it on 127.0.0.1:0 in a temp dir.
type Main struct {
	cfg   Config
	Store *registry.Store
	Disc  *discover.Discoverer
	Gate  *ground.Gate
	Exec  *execution.Executor
	data  *dataRoot
	http  *http.Server
	ln    net.Listener
}

// Open opens the database (seeding a new one with the built-in catalog),
// builds discovery and the gate, and starts listening.
func Open(ctx context.Context, cfg Config) (m *Main, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 15 * time.Second
	}
	m = &Main{cfg: cfg}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	if m.data, err = openDataRoot(cfg.Data); err != nil {
		return nil, err
	}
	m.Store, err = registry.Open(ctx, cfg.DB, registry.Options{Logger: cfg.Logger})
	if err != nil {
		return nil, hintLocked(err, cfg.DB)
	}
	if err := seedBuiltin(ctx, m.Store); err != nil {
		return nil, err
	}
	m.Disc, err = discover.New(ctx, m.Store, m.Store.DB(), discover.Options{Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	m.Gate, err = ground.New(m.Store, m.Disc, m.Store.DB(), ground.WithLogger(cfg.Logger))
	if err != nil {
		return nil, err
	}
	if m.Exec, err = newExecutor(m.Store, m.data, cfg.Logger); err != nil {
		return nil, err
	}
	srv := server.New(server.Deps{Registry: m.Store, Discoverer: m.Disc, Gate: m.Gate, Executor: m.Exec},
		server.Config{AdminToken: cfg.AdminToken, Logger: cfg.Logger})
	m.http = &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	m.ln, err = net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	return m, nil
}

// Addr is the address the server listens on.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// Run serves until ctx is cancelled, then shuts down gracefully: the
// listener closes, in-flight requests finish (up to ShutdownTimeout), and
// the database is closed cleanly.
func (m *Main) Run(ctx context.Context) error {
	cur := m.Store.Current()
	m.cfg.Logger.Info("serving", "addr", m.Addr(), "db", m.cfg.DB, "data", m.data.name,
		"version", cur.Version(), "registry", cur.Registry().String(), "writes", m.cfg.AdminToken != "")
	errc := make(chan error, 1)
	go func() { errc <- m.http.Serve(m.ln) }()
	select {
	case err := <-errc:
		m.Close()
		return err
	case <-ctx.Done():
	}
	m.cfg.Logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), m.cfg.ShutdownTimeout)
	defer cancel()
	err := m.http.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close releases the listener, the data root and the database.
func (m *Main) Close() error {
	if m.ln != nil {
		m.ln.Close()
	}
	if m.data != nil {
		m.data.Close()
	}
	if m.Store != nil {
		err := m.Store.Close()
		m.Store = nil
		return err
	}
	return nil
}

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
	m, err := Open(ctx, Config{Addr: *addr, DB: *db, Data: *data, AdminToken: cli.Getenv("GROUNDGATE_ADMIN_TOKEN"), Logger: logger})
	if err != nil {
		return err
	}
	return m.Run(ctx)
}
