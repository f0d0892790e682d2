package gateway

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/groundgate/groundgate/internal/testio"
)

// The real upstreams: the npm packages pinned in tools/package.json,
// installed in tools/node_modules by `npm ci --prefix tools` (which
// scripts/test.sh runs when they are missing).
const (
	everythingPkg = "@modelcontextprotocol/server-everything"
	filesystemPkg = "@modelcontextprotocol/server-filesystem"
)

// npmServer returns the argv that runs the installed package's server
// with node (no npx: the bin script, run directly), or skips the test
// (fails it under GROUNDGATE_REQUIRE_TOOLS).
func npmServer(t testing.TB, pkg string, args ...string) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testio.MissingTool(t, "node is not installed (Debian package nodejs)")
	}
	script, err := filepath.Abs(filepath.Join("..", "tools", "node_modules", filepath.FromSlash(pkg), "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(script); err != nil {
		testio.MissingTool(t, fmt.Sprintf("%s is not installed in tools/node_modules (npm ci --prefix tools --ignore-scripts)", pkg))
	}
	return append([]string{node, script}, args...)
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

// everythingHTTP starts server-everything's streamable HTTP transport on
// a free loopback port and returns its /mcp URL; the process (and its
// group) is killed at cleanup.
func everythingHTTP(t testing.TB) string {
	t.Helper()
	argv := npmServer(t, everythingPkg, "streamableHttp")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + addr + "/mcp"
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

// goroutines returns the number of goroutines once it stops falling
// below want, waiting up to d for it to get there.
func goroutinesSettle(want int, d time.Duration) int {
	deadline := time.Now().Add(d)
	n := runtime.NumGoroutine()
	for n > want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		runtime.GC()
		n = runtime.NumGoroutine()
	}
	return n
}
