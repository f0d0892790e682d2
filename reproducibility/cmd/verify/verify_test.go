package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStats(t *testing.T) {
	ds := []time.Duration{4 * time.Millisecond, 1 * time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond}
	s := stats("discover", "cli", "x", ds)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if s.N != 4 || !near(s.Mean, 2.5) || !near(s.Median, 2.5) || !near(s.Min, 1) || !near(s.Max, 4) || !near(s.SD, math.Sqrt(5.0/3)) || !near(s.P99, 3.97) {
		t.Fatalf("%+v", s)
	}
	if s.PaperMean == nil || *s.PaperMean != 13.6 {
		t.Fatalf("paper figure missing: %+v", s)
	}
	if r := stats("discover", "rest", "x", ds); r.PaperMean != nil {
		t.Fatal("the paper has no REST figure")
	}
}

func TestServeAddr(t *testing.T) {
	for line, want := range map[string]string{
		`{"level":"INFO","msg":"serving","addr":"127.0.0.1:41234","db":"x.db"}`: "127.0.0.1:41234",
		`{"level":"INFO","msg":"registry version committed","version":1}`:       "",
		`not json`: "",
	} {
		if got := serveAddr([]byte(line)); got != want {
			t.Errorf("serveAddr(%s) = %q, want %q", line, got, want)
		}
	}
}

// Without overhead, two runs write byte-identical results: everything but
// the timings is deterministic. The report shows each figure beside the
// paper's.
func TestRunDeterministic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	runs := 2
	if testing.Short() {
		runs = 1
	}
	// The runs share nothing (each its own databases and directories), so
	// they run at once.
	dirs := make([]string, runs)
	errs := make([]error, runs)
	results := make([]*Results, runs)
	var wg sync.WaitGroup
	for i := range runs {
		dirs[i] = filepath.Join(t.TempDir(), "results")
		wg.Go(func() { results[i], errs[i] = Run(ctx, Config{Out: dirs[i], Reps: 2, SkipOverhead: true}, io.Discard) })
	}
	wg.Wait()
	var outs [][]byte
	for i, dir := range dirs {
		res, err := results[i], errs[i]
		if err != nil {
			t.Fatal(err)
		}
		if !res.Pass {
			t.Fatalf("run %d: a claim failed: %+v", i, res.Claims)
		}
		b, err := os.ReadFile(filepath.Join(dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, b)
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"**Result: PASS** — all 7 gating claims hold",
			"| Grounded (27; paper 27) | 27 (27) | 0 (0) |",
			"| Ungrounded (69; paper 69) | 0 (0) | 69 (69) |",
			"| Momentum / Sharpe | window=25 |",
			"| scoring metric | metric SRP → TRN | = | Δ | = | = | Δ | Δ (Δ if the best differs) |",
			"Skipped (`-skip-overhead`)",
		} {
			if !strings.Contains(string(md), want) {
				t.Errorf("report.md lacks %q", want)
			}
		}
	}
	var v Results
	if err := json.Unmarshal(outs[0], &v); err != nil || len(v.Claims) != 7 || v.Overhead != nil {
		t.Fatalf("results.json: %v, %d claims", err, len(v.Claims))
	}
	if runs == 2 && !bytes.Equal(outs[0], outs[1]) {
		t.Fatal("two runs wrote different results.json")
	}
}

// A small overhead run: the binary builds, each CLI stage runs and answers
// as expected, and the REST server starts, answers and stops. No timing is
// asserted.
func TestOverheadRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the groundgate binary")
	}
	t.Parallel() // no timing is asserted, so the other test may run beside it
	ctx := context.Background()
	root, err := moduleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, err := buildBinary(ctx, root, dir)
	if err != nil {
		t.Fatal(err)
	}
	ov, err := measureOverhead(ctx, bin, dir, 2, 100, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tm := range ov.Timings {
		got = append(got, tm.Via+"/"+tm.Stage)
		if tm.Via == "cli" && tm.N != 2 || tm.Via == "rest" && tm.N != 100 || !(tm.Min > 0) {
			t.Errorf("%+v", tm)
		}
	}
	if strings.Join(got, " ") != "cli/discover cli/ground cli/dry-run rest/discover rest/ground" {
		t.Fatalf("stages %v", got)
	}
	if len(ov.Phases) != 7 || ov.Phases[0].N != 2 {
		t.Errorf("phases: %+v", ov.Phases)
	}
	res := &Results{Overhead: ov}
	res.claims(false)
	for _, c := range res.Claims {
		if c.Gating {
			t.Errorf("overhead claim %s gates without -strict-overhead", c.ID)
		}
	}
}
