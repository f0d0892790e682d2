package testio

import (
	"fmt"
	"strings"
	"testing"
)

// GROUNDGATE_PYTHON, when set, is the only interpreter tried: a missing one
// or one without a module is an error naming it, never a fallback to
// another python3 on the PATH.
func TestFindPythonNamed(t *testing.T) {
	t.Setenv(PythonEnv, "/nonexistent/python3")
	if py, err := FindPython(); err == nil || !strings.Contains(err.Error(), "/nonexistent/python3") {
		t.Fatalf("a missing %s: %q, %v", PythonEnv, py, err)
	}
	t.Setenv(PythonEnv, "")
	py, err := FindPython()
	if err != nil {
		MissingTool(t, err.Error()) // a failure under GROUNDGATE_REQUIRE_TOOLS, as in CI
	}
	t.Setenv(PythonEnv, py)
	if got, err := FindPython(); err != nil || got != py {
		t.Fatalf("%s=%s: %q, %v", PythonEnv, py, got, err)
	}
	if _, err := FindPython("groundgate_no_such_module"); err == nil || !strings.Contains(err.Error(), "groundgate_no_such_module") {
		t.Fatalf("a module it lacks: %v", err)
	}
}

// recorder is a testing.TB that records Fatalf and Skipf instead of
// stopping the goroutine.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Fatalf(format string, a ...any) { r.fatal = fmt.Sprintf(format, a...) }
func (r *recorder) Skipf(format string, a ...any)  { r.skip = fmt.Sprintf(format, a...) }

// A missing tool skips; with GROUNDGATE_REQUIRE_TOOLS set (scripts/test.sh)
// it fails, naming the tool.
func TestMissingTool(t *testing.T) {
	t.Setenv(RequireToolsEnv, "")
	r := &recorder{TB: t}
	MissingTool(r, "README.md needs jq")
	if r.fatal != "" || !strings.Contains(r.skip, "jq") {
		t.Errorf("without %s: fatal %q, skip %q", RequireToolsEnv, r.fatal, r.skip)
	}
	t.Setenv(RequireToolsEnv, "1")
	r = &recorder{TB: t}
	MissingTool(r, "README.md needs jq")
	if r.skip != "" || !strings.Contains(r.fatal, "jq") {
		t.Errorf("with %s: fatal %q, skip %q", RequireToolsEnv, r.fatal, r.skip)
	}
}
