// Package runstest helps tests of fuzz runs (the runs package's and the
// server's): it checks that no run outlives its test.
package runstest

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// runGoroutines lists the goroutines still inside a fuzz run.
func runGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if s := string(g); strings.Contains(s, "fuzz/runs.(*Manager).run") || strings.Contains(s, "groundgate/fuzz.Run(") {
			out = append(out, s)
		}
	}
	return out
}

// NoRunLeft fails the test if a goroutine of a run is still alive after a
// grace period: one that has signalled its end may still be returning
// (goleak waits likewise).
func NoRunLeft(t testing.TB) {
	t.Helper()
	var left []string
	for range 200 {
		if left = runGoroutines(); len(left) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("a run's goroutine outlived it:\n%s", left[0])
}
