package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/groundgate/groundgate/gateway/upstreamtest"
)

const (
	everythingPkg = upstreamtest.EverythingPkg
	filesystemPkg = upstreamtest.FilesystemPkg
)

// npmServer is upstreamtest.NPMServer.
func npmServer(t testing.TB, pkg string, args ...string) []string {
	t.Helper()
	return upstreamtest.NPMServer(t, pkg, args...)
}

// fastLimits are limits for tests: quick reconnection and shutdown.
func fastLimits() Limits {
	return Limits{
		BackoffMin: 50 * time.Millisecond, BackoffMax: 500 * time.Millisecond,
		StopGrace: 300 * time.Millisecond, ConnectTimeout: 20 * time.Second, CallTimeout: 15 * time.Second,
	}
}

// startUpstream makes, starts and waits for an upstream, closed at
// cleanup.
func startUpstream(t testing.TB, name string, cfg Config, opts Options) *Upstream {
	t.Helper()
	u, err := New(name, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	u.Start(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := u.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return u
}

// everythingHTTP is upstreamtest.EverythingHTTP.
func everythingHTTP(t testing.TB) string {
	t.Helper()
	return upstreamtest.EverythingHTTP(t)
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
