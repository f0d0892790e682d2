package testio

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPrintGolden(t *testing.T) {
	t.Setenv(GoldenEnv, "")
	PrintGolden(t, []byte("nothing: GoldenEnv is empty\n"))
	path := filepath.Join(t.TempDir(), "golden")
	t.Setenv(GoldenEnv, path)
	PrintGolden(t, []byte("a\nb"))
	PrintGolden(t, nil)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "=== TestPrintGolden 3 bytes\na\nb\n=== TestPrintGolden 0 bytes\n\n"
	if string(got) != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}
