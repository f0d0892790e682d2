package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/registry"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"groundgate": func() { os.Exit(run(context.Background(), os.Args[1:])) },
	})
}

// TestScripts runs the CLI scripts in testdata/script: each asserts stdout,
// stderr and exit codes of real command lines.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}

// runCLI runs a command line in-process and returns its exit code and
// output streams.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cli := &CLI{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := cli.Main(context.Background(), args)
	return code, out.String(), errb.String()
}

// What the CLI prints is recomputed by an independent RFC 8785 + SHA-256
// implementation (Python's standard library, registry/testdata/
// jcs_identity.py) and must agree entry by entry, and on the registry hash.
func TestExportRecomputedIndependently(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 not found; .ci/run must install it")
		}
		t.Skip("python3 not found")
	}
	db := filepath.Join(t.TempDir(), "g.db")
	code, export, stderr := runCLI(t, "registry", "export", "--db", db)
	if code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	var body registry.Export
	if err := json.Unmarshal([]byte(export), &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Capabilities) == 0 {
		t.Fatal("empty export")
	}
	cmd := exec.Command(py, "../../registry/testdata/jcs_identity.py")
	cmd.Stdin = strings.NewReader(export)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(body.Capabilities)+1 {
		t.Fatalf("python printed %d lines for %d capabilities", len(lines), len(body.Capabilities))
	}
	for i, c := range body.Capabilities {
		if want := c.Name + " " + c.Identity.String(); lines[i] != want {
			t.Errorf("entry %d: python %q, CLI %q", i, lines[i], want)
		}
	}
	if want := "registry " + body.Registry.String(); lines[len(lines)-1] != want {
		t.Errorf("registry: python %q, CLI %q", lines[len(lines)-1], want)
	}
}

// registry verify exits non-zero and names the problem when a stored
// record no longer hashes to its key.
func TestVerifyReportsTampering(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	if code, _, stderr := runCLI(t, "registry", "export", "--db", db); code != 0 {
		t.Fatal(stderr)
	}
	if code, out, _ := runCLI(t, "registry", "verify", "--db", db); code != 0 || !strings.HasPrefix(out, "ok: 1 version") {
		t.Fatalf("fresh verify: %d %q", code, out)
	}
	bdb, err := bolt.Open(db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("registry.records"))
		k, v := b.Cursor().Last()
		v = bytes.Replace(v, []byte(`"pure":true`), []byte(`"pure":false`), 1)
		return b.Put(append([]byte(nil), k...), v)
	})
	bdb.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "registry", "verify", "--db", db)
	if code != 1 || out != "" || !strings.Contains(stderr, "MISMATCH") || !strings.Contains(stderr, "hashes to") {
		t.Fatalf("verify after tamper: code %d, stdout %q, stderr %q", code, out, stderr)
	}
}
