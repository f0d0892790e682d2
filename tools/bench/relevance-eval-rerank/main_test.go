package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/discover/relevance"
)

// synthetic returns n requests of 10 candidates in the tier's order
// (full score falling); the gold is 7th, and only it has a description
// part: a model that reads the description puts it first.
func synthetic(n int, half string) []row {
	var rows []row
	for i := range n {
		r := row{Data: "stabletoolbench", Half: half, Condition: "served", ID: fmt.Sprint(i)}
		for c := range 10 {
			var f [relevance.NumFeatures]int64
			f[relevance.FeatFull] = int64(900_000 - 50_000*c + 1_000*(i%7))
			f[relevance.FeatRank] = 1_000_000 / int64(1+c)
			name := fmt.Sprintf("r%d_c%d", i, c)
			if c == 6 {
				f[relevance.FeatDesc] = 400_000
				r.Gold = []string{name}
			}
			r.Candidates = append(r.Candidates, relevance.Candidate{Name: name, Features: f})
		}
		rows = append(rows, r)
	}
	return rows
}

func TestFitLearnsTheSeparatingFeature(t *testing.T) {
	rows := synthetic(40, "dev")
	mask := make([]bool, relevance.NumFeatures)
	for i := range mask {
		mask[i] = true
	}
	if r, _ := recall(rows, tier, 5); r != 0 {
		t.Fatalf("tier's recall@5 %v, want 0", r)
	}
	for _, lambda := range []int{0, 5} {
		m := fit(rows, mask, 0.001, 300, 0, lambda).integer()
		rr := func(r row) ([]string, float64) { return rerank(r, m) }
		if r, all := recall(rows, rr, 1); r != 1 || all != len(rows) {
			t.Errorf("lambda %d: reranked recall@1 %v (%d all), want 1: weights %v", lambda, r, all, m.w)
		}
		if m.w[relevance.FeatDesc] <= 0 {
			t.Errorf("lambda %d: description weight %v", lambda, m.w[relevance.FeatDesc])
		}
		if lo, hi := bootstrap(rows, rr, 5); lo != 1 || hi != 1 {
			t.Errorf("lambda %d: bootstrap %v … %v, want 1 … 1", lambda, lo, hi)
		}
	}
	// Masked out, the feature cannot be learnt.
	mask[relevance.FeatDesc] = false
	m := fit(rows, mask, 0.001, 300, 0, 0)
	if m.w[relevance.FeatDesc] != 0 {
		t.Errorf("masked description weight %v", m.w[relevance.FeatDesc])
	}
}

func TestAUC(t *testing.T) {
	mk := func(best ...int64) []row {
		var rs []row
		for _, b := range best {
			var f [relevance.NumFeatures]int64
			f[relevance.FeatFull] = b
			rs = append(rs, row{Candidates: []relevance.Candidate{{Name: "x", Features: f}}})
		}
		return rs
	}
	a, below := auc(mk(10, 20, 30, 40, 50, 60, 70, 80, 90, 100), mk(5, 15, 20, 200), tier)
	// Pairs won: 5 → 10, 15 → 9, 20 → 8.5 (one tie), 200 → 0: 27.5/40.
	if math.Abs(a-27.5/40) > 1e-12 || below != 0.5 {
		t.Errorf("auc %v, below %v; want %v, 0.5", a, below, 27.5/40)
	}
}

// The command reads relevance-eval's --candidates lines (documents
// skipped) and prints its table and weights.
func TestRun(t *testing.T) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	if err := enc.Encode(map[string]any{"data": "stabletoolbench", "doc": map[string]string{"name": "x"}}); err != nil {
		t.Fatal(err)
	}
	for _, r := range append(synthetic(20, "dev"), synthetic(10, "test")...) {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "cands.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{"--iters", "200", "--features", "full,rank,desc", path}, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"test  stabletoolbench/served", "0.000   1.000", "desc", "95 % bootstrap"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if err := run([]string{"--features", "nope", path}, &out); err == nil {
		t.Error("an unknown feature was accepted")
	}
}
