package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/groundgate/groundgate/agent/llm"
	"github.com/groundgate/groundgate/internal/testio"
)

// TestFuzzCommand: `groundgate fuzz --json` prints SPEC §12's report —
// registry, version, findings with id, kind, capability and detail,
// suggestions, the runtime tests' summary — and the same seed twice prints
// the same bytes. The runtime tests run on a data root of one short file
// (--data) beside their generated frames: the bundled files make a run
// twice as long and prove nothing more about the command (a default run
// over them is fuzz's TestRuntimeSeededDivision and docs/fuzzing.md's).
func TestFuzzCommand(t *testing.T) {
	t.Parallel() // whole fuzz runs, on their own databases: nothing shared
	db := filepath.Join(t.TempDir(), "f.db")
	data := testio.ShortPriceRoot(t)
	code, out, errOut := runCLI(t, "fuzz", "--db", db, "--json", "--seed", "3", "--data", data)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Registry    string `json:"registry"`
		Version     uint64 `json:"version"`
		Complete    bool   `json:"complete"`
		Tests       []string
		Suggestions []any `json:"suggestions"`
		Findings    []struct {
			ID, Kind, Capability, Detail string
		} `json:"findings"`
		Runtime *struct {
			Cases, Ran int
			Frames     []string
		} `json:"runtime"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Registry == "" || r.Version != 1 || !r.Complete || r.Suggestions == nil || len(r.Findings) == 0 {
		t.Fatalf("report %+v", r)
	}
	if !slices.Contains(r.Tests, "runtime") || r.Runtime == nil || r.Runtime.Ran != r.Runtime.Cases || r.Runtime.Cases == 0 ||
		!slices.Contains(r.Runtime.Frames, "spot/daily.csv") {
		t.Fatalf("runtime tests: %v %+v, want every case run, on the --data root's file too", r.Tests, r.Runtime)
	}
	for _, f := range r.Findings {
		if f.ID == "" || f.Kind == "" || f.Capability == "" || f.Detail == "" {
			t.Fatalf("finding %+v", f)
		}
	}
	if _, again, _ := runCLI(t, "fuzz", "--db", db, "--json", "--seed", "3", "--data", data); again != out {
		t.Fatal("the same seed printed different reports")
	}
	if code, _, _ := runCLI(t, "fuzz", "--db", db, "--seconds", "0"); code != 2 {
		t.Fatalf("--seconds 0: exit %d", code)
	}
}

// TestFuzzParaphraseLLM: --paraphrase-llm asks the configured
// OpenAI-compatible endpoint once per family and metric and asks discovery
// its phrasings on top of the grammar's; without the endpoint configured
// the flag is a usage error.
func TestFuzzParaphraseLLM(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"{\"phrases\": [\"ride the big moves\", \"lean against the crowd\"]}"}}]}`)
	}))
	defer srv.Close()
	env := map[string]string{llm.EnvBaseURL: srv.URL + "/v1", llm.EnvModel: "m"}
	run := func(getenv func(string) string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		cli := &CLI{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: getenv}
		return cli.Main(context.Background(), args), out.String(), errb.String()
	}
	db := filepath.Join(t.TempDir(), "f.db")
	var plain, withLLM struct{ Probes int }
	_, out, _ := run(func(string) string { return "" }, "fuzz", "--db", db, "--runtime=false", "--json")
	if err := json.Unmarshal([]byte(out), &plain); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(func(k string) string { return env[k] }, "fuzz", "--db", db, "--runtime=false", "--paraphrase-llm", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if err := json.Unmarshal([]byte(out), &withLLM); err != nil {
		t.Fatal(err)
	}
	// 4 families and 9 metrics, one call each, two phrasings each.
	if calls.Load() != 13 || withLLM.Probes != plain.Probes+26 {
		t.Errorf("%d calls, %d probes (without the LLM %d); want 13 calls and 26 more probes", calls.Load(), withLLM.Probes, plain.Probes)
	}
	if code, _, _ := run(func(string) string { return "" }, "fuzz", "--db", db, "--paraphrase-llm"); code != 2 {
		t.Errorf("--paraphrase-llm without an endpoint: exit %d, want 2", code)
	}
}
