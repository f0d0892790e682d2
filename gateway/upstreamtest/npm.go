package upstreamtest

import (
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

// The real upstreams: npm packages pinned in tools/package.json, installed
// in tools/node_modules by `npm ci --prefix tools` (which scripts/test.sh
// runs when they are missing).
const (
	EverythingPkg = "@modelcontextprotocol/server-everything"
	FilesystemPkg = "@modelcontextprotocol/server-filesystem"
	MemoryPkg     = "@modelcontextprotocol/server-memory"
)

// NPMServer returns the argv that runs an installed package's server with
// node (no npx: the bin script, run directly), or skips the test (fails
// it under GROUNDGATE_REQUIRE_TOOLS).
func NPMServer(tb testing.TB, pkg string, args ...string) []string {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testio.MissingTool(tb, "node is not installed (Debian package nodejs)")
	}
	root, err := repoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	script := filepath.Join(root, "tools", "node_modules", filepath.FromSlash(pkg), "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		testio.MissingTool(tb, fmt.Sprintf("%s is not installed in tools/node_modules (npm ci --prefix tools --ignore-scripts)", pkg))
	}
	return append([]string{node, script}, args...)
}

// repoRoot is the directory holding go.mod, above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("upstreamtest: no go.mod above the working directory")
		}
		dir = up
	}
}

// EverythingHTTP starts server-everything's streamable HTTP transport on
// a free loopback port and returns its /mcp URL; the process (and its
// group) is killed at cleanup.
func EverythingHTTP(tb testing.TB) string {
	tb.Helper()
	argv := NPMServer(tb, EverythingPkg, "streamableHttp")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
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
			tb.Fatalf("server-everything did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + addr + "/mcp"
}

// GoroutinesSettle returns the number of goroutines once it is no more
// than want, waiting up to d for it to fall there: a leak check's "after".
func GoroutinesSettle(want int, d time.Duration) int {
	deadline := time.Now().Add(d)
	n := runtime.NumGoroutine()
	for n > want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		runtime.GC()
		n = runtime.NumGoroutine()
	}
	return n
}
