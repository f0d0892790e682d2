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

	"github.com/groundgate/groundgate/internal/testio"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/store/pgstore/pgstoretest"
)

func TestMain(m *testing.M) {
	// The PostgreSQL cluster and S3 server of the shared-store tests
	// start only if one asks; they stop after the tests.
	testscript.Main(stopping{m}, map[string]func(){
		"groundgate": func() { os.Exit(run(context.Background(), os.Args[1:])) },
	})
}

// stopping runs the tests, then stops pgstoretest's servers.
type stopping struct{ m *testing.M }

func (s stopping) Run() int {
	code := s.m.Run()
	pgstoretest.Stop()
	return code
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
	py := testio.Python(t)
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

// run, replay and diff from the command line, on the bundled sample data.
func TestRunReplayDiffCLI(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mom := write("mom.json", `{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100]},"data":"oil-spot/wti-daily.csv"}`)
	rev := write("rev.json", `{"family":"MOM_REV","metric":"SRP","params":{"window":50},"data":"oil-spot/wti-daily.csv"}`)

	code, out, stderr := runCLI(t, "run", "--db", db, "--request", mom, "--prompt", "momentum on WTI, by Sharpe")
	if code != 0 {
		t.Fatalf("run: %d %s", code, stderr)
	}
	var fp struct {
		Hash     string `json:"hash"`
		Selected string `json:"selected"`
	}
	if err := json.Unmarshal([]byte(out), &fp); err != nil || fp.Hash == "" || fp.Selected == "" {
		t.Fatalf("run output: %v %.300s", err, out)
	}
	// Running the same grounded request again gives the same footprint.
	if code, out2, _ := runCLI(t, "run", "--db", db, "--request", mom, "--prompt", "momentum on WTI, by Sharpe"); code != 0 || out2 != out {
		t.Fatalf("second run differs (code %d)", code)
	}
	code, out, stderr = runCLI(t, "replay", "--db", db, fp.Hash)
	if code != 0 || !strings.Contains(out, `"match": true`) {
		t.Fatalf("replay: %d %s %s", code, stderr, out)
	}
	// The unrequested family never runs: exit 1, the problem printed.
	code, out, stderr = runCLI(t, "run", "--db", db, "--request", rev, "--prompt", "momentum on WTI, by Sharpe")
	if code != 1 || !strings.Contains(out, `"code": "F3"`) || !strings.Contains(stderr, "nothing ran") {
		t.Fatalf("run MOM_REV: %d %s %s", code, out, stderr)
	}
	code, out, _ = runCLI(t, "diff", "--db", db, fp.Hash, fp.Hash)
	if code != 0 || !strings.Contains(out, `"same": true`) {
		t.Fatalf("diff with itself: %d %.300s", code, out)
	}
	if code, _, stderr := runCLI(t, "replay", "--db", db, "sha256:"+strings.Repeat("0", 64)); code != 3 || !strings.Contains(stderr, "not found") {
		t.Fatalf("replay unknown: %d %s", code, stderr)
	}
}
