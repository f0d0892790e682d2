package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/internal/app"
)

// runProcess runs the groundgate binary as its own process (TestMain's
// testscript.Main put it on PATH), so that a panic shows as what a user
// would see: a stack trace on stderr and exit status 2. It is safe to call
// from several goroutines.
func runProcess(t *testing.T, args ...string) (code int, stdout, stderr string) {
	bin, err := exec.LookPath("groundgate")
	if err != nil {
		t.Error(err)
		return -1, "", ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "GROUNDGATE_ADMIN_TOKEN=")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee) && ctx.Err() == nil:
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Errorf("groundgate %v: %v: %s", args, err, errb.String())
	return -1, out.String(), errb.String()
}

// checkOneLine asserts a failure printed exactly one line to stderr, with
// the command's prefix and the expected words, and no panic, and exited
// with wantCode (the status of its error's kind, docs/operations.md).
func checkOneLine(t *testing.T, what string, code, wantCode int, stderr, prefix, want string) {
	t.Helper()
	line := strings.TrimSuffix(stderr, "\n")
	if code != wantCode || strings.Contains(line, "\n") || !strings.HasPrefix(line, prefix) || !strings.Contains(line, want) ||
		strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine") {
		t.Errorf("%s: exit %d, stderr:\n%s\nwant exit %d and one line %q… containing %q", what, code, stderr, wantCode, prefix, want)
	}
}

// `groundgate serve` that cannot start says why in one line, exits 1, and
// leaves no new database behind.
func TestServeStartupFailures(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"busy port", []string{"--addr", busy.Addr().String()}, "address already in use"},
		{"no port", []string{"--addr", "localhost"}, "missing port in address"},
		{"bad port", []string{"--addr", "127.0.0.1:99999"}, "invalid port"},
		{"missing data dir", []string{"--addr", "127.0.0.1:0", "--data", "NODIR"}, "data root"},
		{"missing db dir", []string{"--addr", "127.0.0.1:0", "--db", "NODIR/g.db"}, "no such file or directory"},
	} {
		dir := t.TempDir()
		db := filepath.Join(dir, "g.db")
		args := append([]string{"serve", "--db", db}, c.args...)
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "NODIR", filepath.Join(dir, "nope"))
		}
		code, _, stderr := runProcess(t, args...)
		checkOneLine(t, c.name, code, 1, stderr, "groundgate serve: ", c.want)
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("%s: left %v behind", c.name, left)
		}
	}
}

// The database of a running server: a second server and every CLI
// command say who holds it, in one line, and the first server is unharmed.
func TestLockedDatabase(t *testing.T) {
	ts := startServer(t, "")
	entry := filepath.Join(t.TempDir(), "e.json")
	if err := os.WriteFile(entry, []byte(`{"name":"CHOP_7",`+entryBody[1:]), 0o644); err != nil {
		t.Fatal(err)
	}
	hint := "(is a groundgate server using " + ts.db + "?)"
	zero := "sha256:" + strings.Repeat("0", 64)
	cmds := [][]string{
		{"serve", "--addr", "127.0.0.1:0"},
		{"registry", "export"},
		{"registry", "verify"},
		{"registry", "list"},
		{"registry", "show", "MOM_WZS"},
		{"registry", "history"},
		{"registry", "version", "1"},
		{"registry", "put", entry},
		{"discover", "momentum"},
		{"ground", "--request", entry, "--discovery", zero},
		{"run", "--grounding", zero},
		{"replay", zero},
		{"diff", zero, zero},
	}
	// All at once: each waits out the lock (app.LockWait) before it fails.
	type result struct {
		code           int
		stdout, stderr string
	}
	res := make([]result, len(cmds))
	var wg sync.WaitGroup
	for i, args := range cmds {
		wg.Go(func() {
			r := &res[i]
			r.code, r.stdout, r.stderr = runProcess(t, append(args, "--db", ts.db)...)
		})
	}
	wg.Wait()
	for i, args := range cmds {
		checkOneLine(t, strings.Join(args, " "), res[i].code, 1, res[i].stderr, "groundgate "+args[0]+": ", hint)
		if res[i].stdout != "" {
			t.Errorf("%v: stdout %q", args, res[i].stdout)
		}
	}
	// Still serving, and the file was not removed from under it.
	if r := ts.do("GET", "/healthz", ""); r.status != http.StatusOK {
		t.Errorf("server after the refused commands: %d", r.status)
	}
	if _, err := os.Stat(ts.db); err != nil {
		t.Error(err)
	}
}

// app.Open removes a database file it created when it then fails, and
// never one that was there before.
func TestFailedOpenRemovesOnlyItsOwnDatabase(t *testing.T) {
	dir := t.TempDir()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	fresh := filepath.Join(dir, "fresh.db")
	if _, err := app.Open(cancelled, app.Config{Addr: "127.0.0.1:0", DB: fresh}); !errors.Is(err, context.Canceled) {
		t.Fatalf("open with a cancelled context: %v", err)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the new database is still there: %v", err)
	}
	old := filepath.Join(dir, "old.db")
	if code, _, stderr := runCLI(t, "registry", "export", "--db", old); code != 0 {
		t.Fatal(stderr)
	}
	if _, err := app.Open(cancelled, app.Config{Addr: "127.0.0.1:0", DB: old}); !errors.Is(err, context.Canceled) {
		t.Fatalf("open with a cancelled context: %v", err)
	}
	if code, _, stderr := runCLI(t, "registry", "verify", "--db", old); code != 0 {
		t.Errorf("the existing database did not survive a failed open: %s", stderr)
	}
}

// History starts at version 1, on the command line as over REST.
func TestRegistryVersionZeroCLI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	code, stdout, stderr := runCLI(t, "registry", "version", "--db", db, "0")
	if code != 3 || stdout != "" || !strings.Contains(stderr, "registry version 0: not found") {
		t.Errorf("registry version 0: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, _ := runCLI(t, "registry", "version", "--db", db, "1"); code != 0 {
		t.Errorf("registry version 1: exit %d", code)
	}
}

// registry put leaves the keyword tier's kept index stamped with the
// version it stored, so that the next start opens it instead of building it.
func TestRegistryPutKeepsTextIndex(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	entry := filepath.Join(t.TempDir(), "e.json")
	if err := os.WriteFile(entry, []byte(`{"name":"CHOP_7",`+entryBody[1:]), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "registry", "put", "--db", db, entry)
	if code != 0 || !strings.Contains(stdout, "version 2,") {
		t.Fatalf("registry put: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(discover.DefaultTextIndexDir(db), "current.json"))
	if err != nil {
		t.Fatalf("no stamped text index after registry put: %v", err)
	}
	var stamp struct {
		Version uint64 `json:"version"`
		Dir     string `json:"dir"`
	}
	if err := json.Unmarshal(raw, &stamp); err != nil || stamp.Version != 2 {
		t.Fatalf("stamp %s (%v), want version 2", raw, err)
	}
	if _, err := os.Stat(filepath.Join(discover.DefaultTextIndexDir(db), stamp.Dir)); err != nil {
		t.Fatalf("the stamped index: %v", err)
	}
}
