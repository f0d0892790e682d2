// Package apptest runs the wired server for tests: app.Open on a loopback
// port, served until the test ends.
package apptest

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"github.com/groundgate/groundgate/internal/app"
)

// Serve opens cfg and serves it until stop is called or the test ends,
// whichever comes first; a failed shutdown fails the test. An empty Addr
// is 127.0.0.1:0, an empty DB a file in the test's temp dir (unless Store names a shared store), a nil Logger
// discards.
func Serve(tb testing.TB, cfg app.Config) (m *app.Main, stop func()) {
	tb.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.DB == "" && cfg.Store == "" {
		cfg.DB = filepath.Join(tb.TempDir(), "g.db")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m, err := app.Open(ctx, cfg)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("shutdown: %v", err)
			}
		})
	}
	tb.Cleanup(stop)
	return m, stop
}
