package testio

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The outside tools some tests call (python3 with pandas, numpy or
// cryptography; curl, jq, git): a test that needs one that is missing
// skips, unless RequireToolsEnv is set, when it fails. scripts/test.sh
// (the README's test command) installs every one of them and sets it, so
// there a missing tool is a failure, never a silent skip.
const (
	RequireToolsEnv = "GROUNDGATE_REQUIRE_TOOLS"
	// PythonEnv names the interpreter the tests run Python with;
	// scripts/test.sh sets it to /usr/bin/python3, the interpreter its
	// python3-* Debian packages install into.
	PythonEnv = "GROUNDGATE_PYTHON"
)

// RequireTools reports whether a missing outside tool fails a test rather
// than skipping it.
func RequireTools() bool { return os.Getenv(RequireToolsEnv) != "" }

// MissingTool skips tb for a missing outside tool, or fails it when
// RequireTools.
func MissingTool(tb testing.TB, msg string) {
	tb.Helper()
	if RequireTools() {
		tb.Fatalf("%s (%s is set; bash scripts/test.sh installs it)", msg, RequireToolsEnv)
		return
	}
	tb.Skipf("%s (bash scripts/test.sh installs it; with %s set this fails)", msg, RequireToolsEnv)
}

// FindPython returns a python3 that imports every module named: only
// $GROUNDGATE_PYTHON when it is set; otherwise /usr/bin/python3 (Debian's,
// which the python3-* packages install into), then python3 on the PATH
// (perhaps a pyenv shim without them).
func FindPython(modules ...string) (string, error) {
	candidates := []string{"/usr/bin/python3", "python3"}
	if py := os.Getenv(PythonEnv); py != "" {
		candidates = []string{py}
	}
	var tried []string
	for _, c := range candidates {
		path, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, c+": not found")
			continue
		}
		if len(modules) == 0 {
			return path, nil
		}
		out, err := exec.Command(path, "-c", "import "+strings.Join(modules, ", ")).CombinedOutput()
		if err == nil {
			return path, nil
		}
		tried = append(tried, fmt.Sprintf("%s: %s", path, lastLine(out, err)))
	}
	what := "python3"
	if len(modules) > 0 {
		what += " with " + strings.Join(modules, ", ")
	}
	return "", fmt.Errorf("no %s (tried %s)", what, strings.Join(tried, "; "))
}

// Python is FindPython, with MissingTool when there is none.
func Python(tb testing.TB, modules ...string) string {
	tb.Helper()
	py, err := FindPython(modules...)
	if err != nil {
		MissingTool(tb, err.Error())
	}
	return py
}

func lastLine(out []byte, err error) string {
	s := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return err.Error()
	}
	return s
}

// SharedEnv names the folder of the project's shared material (SPEC,
// data); by default the shared/ beside the repository, where CI and every
// developer have it.
const SharedEnv = "GROUNDGATE_SHARED"

// SharedData returns shared/data/rel: the data sets nobody here wrote
// (StableToolBench, τ-bench). They are not in the repository, so a clone
// outside the project's workspace has none and skips the tests that read
// them (each feature is also tested on a small fixture the repository
// ships); CI has them beside its clone, so there (CI set) a missing one
// fails.
func SharedData(tb testing.TB, rel string) string {
	tb.Helper()
	root := os.Getenv(SharedEnv)
	if root == "" {
		dir, err := os.Getwd()
		if err != nil {
			tb.Fatal(err)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				tb.Fatal("testio: no go.mod above the test's directory")
			}
			dir = parent
		}
		root = filepath.Join(filepath.Dir(dir), "shared")
	}
	path := filepath.Join(root, "data", rel)
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("shared data %s: %v (set %s to the shared folder)", rel, err, SharedEnv)
		if os.Getenv("CI") != "" {
			tb.Fatal(msg + " (CI is set, and CI has shared/ beside its clone)")
		}
		tb.Skip(msg)
	}
	return path
}
