// Package docs_test runs the shell blocks of README.md and docs/*.md, so
// the commands the documentation shows cannot silently rot.
//
// Every block fenced ```sh (or bash, shell) runs, unless the line before
// its fence is a marker:
//
//	<!-- not run: REASON -->   never run (a server in the foreground, …)
//	<!-- slow: REASON -->      run only when GROUNDGATE_DOCS_SLOW=1
//	                           (reproducibility/verify_all.sh sets it)
//
// Each document's blocks run in order in one `bash -euo pipefail`, in the
// document's own scratch copy of the repository (what git ignores left
// out), with groundgate built from this tree on the PATH (and GOBIN
// pointing there, so `go install ./cmd/groundgate` lands there too) and
// ./groundgate.db created as the README's set-up creates it, against the
// document's own `groundgate serve` started on a free loopback port with a
// temporary database; `localhost:8080` in a block is rewritten to that
// port, and GROUNDGATE_ADMIN_TOKEN is the server's token in both.
// Documents run side by side, as many at a time as -parallel allows.
// A block that exits non-zero fails the test, naming its file and line.
// A block's claims must be able to make it exit non-zero: TestDocClaims
// refuses a `test … && …` (set -e ignores its failure) and a curl that
// checks no status (neither -f nor -w '%{http_code}').
//
// A tool a block calls (curl, jq, python3, …) that is missing skips that
// document; with GROUNDGATE_REQUIRE_TOOLS set it fails the test instead
// (scripts/test.sh, the README's test command, installs every one of them
// and sets it). With GROUNDGATE_PYTHON set, the blocks' python3 is that
// interpreter.
package docs_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/groundgate/groundgate/internal/testio"
)

// block is one fenced shell block of a document.
type block struct {
	file string // relative to the repository root
	line int    // 1-based line of the opening fence
	text string
	skip string // the reason of a "not run" marker
	slow string // the reason of a "slow" marker
}

var (
	fenceOpen  = regexp.MustCompile("^```([A-Za-z0-9_-]*)\\s*$")
	markerLine = regexp.MustCompile(`^<!--\s*(not run|slow)\s*(?::\s*(.*?))?\s*-->\s*$`)
	shellLangs = []string{"sh", "bash", "shell"}
)

// parseBlocks returns the shell blocks of a Markdown document. A marker
// that is not directly followed by a shell block is an error, as is an
// unclosed fence.
func parseBlocks(file string, src []byte) ([]block, error) {
	var out []block
	lines := strings.Split(string(src), "\n")
	pendingKind, pendingReason, pendingLine := "", "", 0
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], "\r")
		if m := markerLine.FindStringSubmatch(l); m != nil {
			if m[2] == "" {
				return nil, fmt.Errorf("%s:%d: a %q marker needs a reason: <!-- %s: REASON -->", file, i+1, m[1], m[1])
			}
			pendingKind, pendingReason, pendingLine = m[1], m[2], i+1
			continue
		}
		m := fenceOpen.FindStringSubmatch(l)
		if m == nil {
			if pendingKind != "" && strings.TrimSpace(l) != "" {
				return nil, fmt.Errorf("%s:%d: marker not followed by a shell block", file, pendingLine)
			}
			continue
		}
		start := i
		var body []string
		for i++; i < len(lines) && strings.TrimRight(lines[i], "\r") != "```"; i++ {
			body = append(body, strings.TrimRight(lines[i], "\r"))
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s:%d: unclosed fence", file, start+1)
		}
		if !slices.Contains(shellLangs, m[1]) {
			if pendingKind != "" {
				return nil, fmt.Errorf("%s:%d: marker on a %q block, which never runs", file, pendingLine, m[1])
			}
			continue
		}
		b := block{file: file, line: start + 1, text: strings.Join(body, "\n") + "\n"}
		switch pendingKind {
		case "not run":
			b.skip = pendingReason
		case "slow":
			b.slow = pendingReason
		}
		pendingKind = ""
		out = append(out, b)
	}
	if pendingKind != "" {
		return nil, fmt.Errorf("%s:%d: marker not followed by a shell block", file, pendingLine)
	}
	return out, nil
}

// docFiles lists README.md and docs/*.md, relative to the repository root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(more)
	for _, f := range more {
		rel, _ := filepath.Rel(root, f)
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

func allBlocks(t *testing.T, root string) map[string][]block {
	t.Helper()
	out := map[string][]block{}
	for _, f := range docFiles(t, root) {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		bs, err := parseBlocks(f, src)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = bs
	}
	return out
}

func TestParseBlocks(t *testing.T) {
	doc := "# x\n\n```sh\necho one\n```\n\n<!-- not run: a server -->\n```sh\nserve\n```\n" +
		"<!-- slow: a benchmark -->\n```bash\nbench\n```\n```json\n{}\n```\n```\nart\n```\n"
	bs, err := parseBlocks("x.md", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []block{
		{file: "x.md", line: 3, text: "echo one\n"},
		{file: "x.md", line: 8, text: "serve\n", skip: "a server"},
		{file: "x.md", line: 12, text: "bench\n", slow: "a benchmark"},
	}
	if !slices.Equal(bs, want) {
		t.Fatalf("got %+v\nwant %+v", bs, want)
	}
	for _, bad := range []string{
		"<!-- not run -->\n```sh\nx\n```\n",           // no reason
		"<!-- not run: r -->\ntext\n```sh\nx\n```\n",  // not directly before the block
		"<!-- slow: r -->\n```json\n{}\n```\n",        // on a block that never runs
		"```sh\nunclosed\n",                           // unclosed
		"```sh\nx\n```\n<!-- not run: dangling -->\n", // dangling marker
	} {
		if _, err := parseBlocks("bad.md", []byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// The documents' own blocks parse, and the ones the README and the
// tutorial promise to run are runnable.
func TestDocBlocksMarked(t *testing.T) {
	blocks := allBlocks(t, "..")
	runnable := 0
	for _, bs := range blocks {
		for _, b := range bs {
			if b.skip == "" {
				runnable++
			}
		}
	}
	if runnable < 10 {
		t.Fatalf("only %d runnable blocks", runnable)
	}
	for _, f := range []string{"README.md", "docs/tutorial.md"} {
		run := 0
		for _, b := range blocks[f] {
			if b.skip == "" && b.slow == "" {
				run++
			}
		}
		if run == 0 {
			t.Errorf("%s has no block that runs", f)
		}
	}
}

// TestDocs runs the blocks. Documents run side by side, at most
// -parallel (GOMAXPROCS by default) at a time: each in its own scratch copy
// against its own server, so no document sees another's files or writes,
// and a document passes alone exactly as it passes in the suite.
func TestDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every documented command: not in -short mode")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	blocks := allBlocks(t, root)
	slow := os.Getenv("GROUNDGATE_DOCS_SLOW") == "1"
	// The subtests run after TestDocs returns: cancel at its cleanup, not
	// at its return.
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	t.Cleanup(cancel)

	bin := filepath.Join(t.TempDir(), "bin")
	// Built as the documents' own `go install ./cmd/groundgate` builds it in
	// the scratch copy (-trimpath, and no VCS stamp: the copy has no .git),
	// so that install finds the binary up to date instead of compiling every
	// package a second time.
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-o", filepath.Join(bin, "groundgate"), "./cmd/groundgate")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/groundgate: %v\n%s", err, out)
	}
	// The blocks' python3 is the tests' interpreter when one is named (the
	// one the python3-* packages went into, not a pyenv shim without them).
	if py := os.Getenv(testio.PythonEnv); py != "" {
		path, err := exec.LookPath(py)
		if err != nil {
			testio.MissingTool(t, fmt.Sprintf("%s=%s: %v", testio.PythonEnv, py, err))
		}
		if err := os.Symlink(path, filepath.Join(bin, "python3")); err != nil {
			t.Fatal(err)
		}
	}
	// One scratch copy, with ./groundgate.db created as the README's set-up
	// creates it in the repository root; each document gets a copy of it.
	template := filepath.Join(t.TempDir(), "repo")
	if err := copyTree(root, template); err != nil {
		t.Fatal(err)
	}
	seed := exec.CommandContext(ctx, filepath.Join(bin, "groundgate"), "registry", "export", "--db", "groundgate.db")
	seed.Dir = template
	if out, err := seed.CombinedOutput(); err != nil {
		t.Fatalf("seeding groundgate.db: %v\n%.2000s", err, out)
	}

	token := randomToken(t)
	env := append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GOBIN="+bin,
		"GOFLAGS=-trimpath", // the scratch copy's builds share the build cache with every other copy
		"GROUNDGATE_ADMIN_TOKEN="+token,
	)
	for _, f := range docFiles(t, root) {
		t.Run(strings.ReplaceAll(f, "/", "_"), func(t *testing.T) {
			var run []block
			for _, b := range blocks[f] {
				switch {
				case b.skip != "":
					t.Logf("%s:%d not run: %s", b.file, b.line, b.skip)
				case b.slow != "" && !slow:
					t.Logf("%s:%d slow, not run (GROUNDGATE_DOCS_SLOW=1 runs it): %s", b.file, b.line, b.slow)
				default:
					run = append(run, b)
				}
			}
			if len(run) == 0 {
				t.Skip("no block to run")
			}
			for _, tool := range toolsNeeded(run) {
				if _, err := exec.LookPath(tool); err != nil {
					testio.MissingTool(t, fmt.Sprintf("%s needs %s, which is not installed", f, tool))
				}
			}
			t.Parallel()
			tmp := t.TempDir()
			work := filepath.Join(tmp, "repo")
			// copyTree leaves out every .db: copy the seeded one by hand.
			if err := copyTree(template, work); err != nil {
				t.Fatal(err)
			}
			if err := copyFile(filepath.Join(template, "groundgate.db"), filepath.Join(work, "groundgate.db")); err != nil {
				t.Fatal(err)
			}
			addr := startServer(t, filepath.Join(bin, "groundgate"), filepath.Join(tmp, "server.db"), token)
			t0 := time.Now()
			out, at, err := runBlocks(ctx, run, addr, work, env)
			t.Logf("%d blocks in %.1fs; output:\n%s", len(run), time.Since(t0).Seconds(), tail(out, 6000))
			if err != nil {
				t.Fatalf("a documented command failed at %s: %v", at, err)
			}
		})
	}
}

var (
	// uncheckedTest is a test whose failure set -e ignores: the left side
	// of an && list.
	uncheckedTest = regexp.MustCompile(`^\s*(!\s*)?(test|\[|\[\[)\s.*&&`)
	curlCall      = regexp.MustCompile(`(^|[\s|;&(` + "`" + `$])curl\s`)
	// curlChecked: curl fails on an HTTP error (-f, --fail, --fail-with-body)
	// or writes the status out for a test to check.
	curlChecked = regexp.MustCompile(`\s(-[a-zA-Z]*f[a-zA-Z]*|--fail(-with-body)?)(\s|$)|%\{http_code\}|%\{response_code\}`)
)

// uncheckedClaims lists the lines of a block whose claims cannot fail it.
// Lines continued with a backslash are joined first.
func uncheckedClaims(b block) []string {
	var out []string
	lines := strings.Split(b.text, "\n")
	for i := 0; i < len(lines); i++ {
		start := i
		l := lines[i]
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, "\\") + " " + lines[i]
		}
		code := l
		if j := strings.Index(code, " #"); j >= 0 && !strings.ContainsAny(code[:j], `'"`) {
			code = code[:j] // a trailing comment, outside any quotes
		}
		at := fmt.Sprintf("%s:%d", b.file, b.line+1+start)
		switch {
		case uncheckedTest.MatchString(code):
			out = append(out, at+": `test … && …` never fails the block under set -e; put the test on a line of its own: "+strings.TrimSpace(l))
		case curlCall.MatchString(code) && !curlChecked.MatchString(code):
			out = append(out, at+": curl without -f (or -w '%{http_code}' for an expected error) prints an error page as if it were the answer: "+strings.TrimSpace(l))
		}
	}
	return out
}

func TestUncheckedClaims(t *testing.T) {
	for _, tc := range []struct {
		text string
		bad  int
	}{
		{"test \"$A\" = \"$B\"\n", 0},
		{"test \"$A\" = \"$B\" && echo same\n", 1},
		{"[ -s x ] && echo ok\n", 1},
		{"test -s x || exit 1\n", 0},
		{"curl -sf localhost:8080/healthz\n", 0},
		{"curl -s localhost:8080/healthz | jq .status\n", 1},
		{"X=$(curl -s localhost:8080/healthz)\n", 1},
		{"curl --fail -s localhost:8080/x\n", 0},
		{"curl -s -o r.json -w '%{http_code}' localhost:8080/x\n", 0},
		{"curl -s localhost:8080/v1/discover \\\n  -d '{}' -f > d.json\n", 0},
		{"curl -s -X PUT localhost:8080/x \\\n  -H 'Authorization: Bearer t' > put.json\n", 1},
		{"echo 'curl -s x' # not a call\n", 0},
	} {
		if got := uncheckedClaims(block{file: "x.md", line: 1, text: tc.text}); len(got) != tc.bad {
			t.Errorf("%q: %d unchecked, want %d: %v", tc.text, len(got), tc.bad, got)
		}
	}
}

// Every claim a runnable block makes can fail it.
func TestDocClaims(t *testing.T) {
	for _, bs := range allBlocks(t, "..") {
		for _, b := range bs {
			if b.skip != "" {
				continue
			}
			for _, u := range uncheckedClaims(b) {
				t.Error(u)
			}
		}
	}
}

// toolsNeeded lists the external commands the blocks call that may be
// missing from a machine.
func toolsNeeded(bs []block) []string {
	need := []string{"bash"}
	for _, tool := range []string{"curl", "jq", "python3", "openssl", "sha256sum"} {
		re := regexp.MustCompile(`(^|[\s|;&(` + "`" + `$])` + tool + `\b`)
		for _, b := range bs {
			if re.MatchString(b.text) {
				need = append(need, tool)
				break
			}
		}
	}
	return need
}

// runBlocks runs one document's blocks in one bash. On failure, at names
// the document line of the command that failed.
func runBlocks(ctx context.Context, bs []block, addr, dir string, env []string) (out, at string, err error) {
	rewrite := strings.NewReplacer("localhost:8080", addr, "127.0.0.1:8080", addr)
	var script strings.Builder
	// where maps a line of the script to its place in the document.
	where := map[int]string{}
	line := 0
	emit := func(s, at string) {
		script.WriteString(s + "\n")
		line++
		if at != "" {
			where[line] = at
		}
	}
	emit("set -Eeuo pipefail", "")
	emit(`trap 'echo "::failed at script line $LINENO (exit $?)" >&2' ERR`, "")
	for _, b := range bs {
		emit(fmt.Sprintf("echo '### %s:%d' >&2", b.file, b.line), "")
		for i, l := range strings.Split(strings.TrimSuffix(rewrite.Replace(b.text), "\n"), "\n") {
			emit(l, fmt.Sprintf("%s:%d", b.file, b.line+1+i))
		}
	}
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 10 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	out = buf.String()
	if err != nil {
		at = "an unknown line"
		if m := regexp.MustCompile(`::failed at script line (\d+)`).FindAllStringSubmatch(out, -1); m != nil {
			n, _ := strconv.Atoi(m[0][1])
			if w, ok := where[n]; ok {
				at = w
			}
		}
	}
	return out, at, err
}

// A failing command is reported at its line in the document, also when it
// fails inside a function or a command substitution.
func TestRunBlocksReportsLine(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		blocks []block
		at     string
	}{
		{[]block{{file: "x.md", line: 3, text: "true\n"}, {file: "x.md", line: 10, text: "echo localhost:8080\nfalse\necho never\n"}}, "x.md:12"},
		{[]block{{file: "y.md", line: 1, text: "f() {\n  false\n}\nV=$(f)\n"}}, "y.md:3"},
		{[]block{{file: "z.md", line: 1, text: "echo a | grep -q b\n"}}, "z.md:2"},
	} {
		out, at, err := runBlocks(ctx, tc.blocks, "127.0.0.1:1", t.TempDir(), os.Environ())
		if err == nil || at != tc.at {
			t.Errorf("%+v: err %v at %q, want %q; output:\n%s", tc.blocks, err, at, tc.at, out)
		}
		if strings.Contains(out, "never") {
			t.Errorf("a block went on after a failure:\n%s", out)
		}
	}
	out, _, err := runBlocks(ctx, []block{{file: "ok.md", line: 1, text: "echo localhost:8080\n"}}, "127.0.0.1:1", t.TempDir(), os.Environ())
	if err != nil || !strings.Contains(out, "127.0.0.1:1\n") {
		t.Fatalf("err %v, output %q: localhost:8080 not rewritten", err, out)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// copyTree copies the repository at src to dst: everything but .git, the
// generated results, database files and whatever else git ignores (built
// binaries, tools/node_modules): what a clone with the reader's own edits
// holds.
func copyTree(src, dst string) error {
	ignored, err := gitIgnored(src)
	if err != nil {
		return err
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		slash := filepath.ToSlash(rel)
		if d.IsDir() && (slash == ".git" || slash == "reproducibility/results" || ignored[slash+"/"]) {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		// .git is a file in a linked work tree (git worktree add): a copy of
		// it would make the scratch copy that work tree to git and to go's
		// VCS stamping.
		case !d.Type().IsRegular(), slash == ".git", strings.HasSuffix(p, ".db"), ignored[slash]:
			return nil
		}
		return copyFile(p, target)
	})
}

// copyFile copies the regular file src to dst with its permission bits.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, info.Mode().Perm())
}

// gitIgnored lists what git ignores in the work tree at dir, relative and
// slash-separated, directories with a trailing slash; nothing when dir is
// not a git work tree (an unpacked archive) or git is not installed.
func gitIgnored(dir string) (map[string]bool, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, nil
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return nil, nil
	}
	cmd := exec.Command("git", "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w", dir, err)
	}
	ignored := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			ignored[f] = true
		}
	}
	return ignored, nil
}

// The scratch copy leaves out what git ignores (in the repository that is
// hundreds of MB of node_modules and built binaries), .git and databases,
// and keeps everything else, untracked files too; from a linked work tree
// (whose .git is a file) as from the main one.
func TestCopyTree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testio.MissingTool(t, "TestCopyTree needs git, which is not installed")
	}
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	write := func(root string, files map[string]string) {
		t.Helper()
		for name, body := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	src := t.TempDir()
	git(src, "init", "-q")
	write(src, map[string]string{".gitignore": "/ignored/\n*.bin\n", "a.txt": "a"})
	git(src, "add", ".")
	git(src, "commit", "-q", "-m", "x")
	linked := filepath.Join(t.TempDir(), "wt")
	git(src, "worktree", "add", "-q", linked)
	untracked := map[string]string{"sub/b.txt": "b", "ignored/x.txt": "x", "sub/y.bin": "y", "g.db": "db"}
	write(src, untracked)
	write(linked, untracked)

	for _, from := range []string{src, linked} {
		dst := t.TempDir()
		if err := copyTree(from, dst); err != nil {
			t.Fatal(err)
		}
		var got []string
		err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dst, p)
				got = append(got, filepath.ToSlash(rel))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if want := []string{".gitignore", "a.txt", "sub/b.txt"}; !slices.Equal(got, want) {
			t.Errorf("from %s: copied %v, want %v", from, got, want)
		}
	}
}

func randomToken(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// startServer runs `groundgate serve` on a free loopback port until the
// test ends and returns its address.
func startServer(t *testing.T, bin, db, token string) string {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", db)
	cmd.Env = append(os.Environ(), "GROUNDGATE_ADMIN_TOKEN="+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var v struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &v) == nil && v.Msg == "serving" {
				addrc <- v.Addr
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case a := <-addrc:
		return a
	case <-time.After(30 * time.Second):
		stop()
		t.Fatal("groundgate serve did not start within 30 s")
	}
	return ""
}
