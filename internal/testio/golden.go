package testio

import (
	"fmt"
	"os"
	"testing"
)

// GoldenEnv names a file, by an absolute path (a test runs in its
// package's directory), to which PrintGolden appends what golden tests
// compared. tools/determinism.sh sets it for each build it checks
// (GOAMD64=v1, GOAMD64=v3, GOARCH=arm64) and compares the files with cmp.
const GoldenEnv = "GROUNDGATE_PRINT_GOLDEN"

// PrintGolden appends got, the exact bytes a golden test compares with its
// testdata, to the file GoldenEnv names: a line "=== TestName N bytes",
// the N bytes, a newline. Call it before comparing, so that a build that
// fails still shows what it computed. Without GoldenEnv it does nothing.
func PrintGolden(t testing.TB, got []byte) {
	t.Helper()
	path := os.Getenv(GoldenEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatalf("%s: %v", GoldenEnv, err)
	}
	_, err = fmt.Fprintf(f, "=== %s %d bytes\n%s\n", t.Name(), len(got), got)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("%s: %v", GoldenEnv, err)
	}
}

// Golden compares got with the golden file path after printing it
// (PrintGolden); with update it first rewrites the file with got. A
// difference is an error that shows got, to review before -update.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	PrintGolden(t, got)
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs (go test -update rewrites it); got:\n%s", path, got)
	}
}
