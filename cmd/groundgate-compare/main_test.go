package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/groundgate/groundgate/agent"
	"github.com/groundgate/groundgate/agent/llm"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func readResults(t *testing.T, path string) (*agent.Results, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r agent.Results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r, b
}

// TestScriptedRunIsDeterministic runs the command twice, each time on its
// own in-process server, and compares the files byte for byte.
func TestScriptedRunIsDeterministic(t *testing.T) {
	var outs [][]byte
	var mds [][]byte
	for i := 0; i < 2; i++ {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		err := Main(context.Background(), []string{"--only", "S01,C01,U01,M01", "--reps", "2", "--out", dir}, &stdout, &stderr, env(nil))
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		res, b := readResults(t, filepath.Join(dir, "comparison-scripted.json"))
		if res.Executor != "available" {
			t.Fatalf("executor %q, want available: POST /v1/executions is missing from the server", res.Executor)
		}
		md, err := os.ReadFile(filepath.Join(dir, "comparison-scripted.md"))
		if err != nil {
			t.Fatal(err)
		}
		outs, mds = append(outs, b), append(mds, md)
		if res.Proposer != agent.ScriptedLabel || res.ProposerKind != "scripted" || len(res.Trials) != 16 {
			t.Errorf("results: proposer %q kind %q, %d trials", res.Proposer, res.ProposerKind, len(res.Trials))
		}
		if !strings.Contains(stdout.String(), agent.ScriptedLabel) || !strings.Contains(stdout.String(), "overall") {
			t.Errorf("stdout:\n%s", stdout.String())
		}
		if got := strings.Count(stderr.String(), "\n"); got != 16 {
			t.Errorf("%d progress lines, want 16:\n%s", got, stderr.String())
		}
		for _, tr := range res.Trials {
			if tr.Proposer != agent.ScriptedLabel {
				t.Fatalf("trial %s not labelled", tr.Prompt)
			}
		}
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Error("two scripted runs wrote different JSON")
	}
	if !bytes.Equal(mds[0], mds[1]) {
		t.Error("two scripted runs wrote different markdown")
	}
}

// TestLLMRun runs the command against a loopback imitation of an
// OpenAI-compatible endpoint configured through the environment.
func TestLLMRun(t *testing.T) {
	var calls atomic.Int32
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(r.Body)
		// The imitation model always answers momentum by Sharpe.
		content := `{"family": "MOM_WZS", "metric": "SRP", "params": {"window": 50}, "rationale": "fixed"}`
		if !bytes.Contains(b, []byte("MOM_WZS")) {
			content = `{"abstain": true, "reason": "momentum was not offered"}`
		}
		out, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": content}}}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	}))
	defer endpoint.Close()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := Main(context.Background(), []string{"--only", "S01,U01", "--reps", "1", "--out", dir, "-q"}, &stdout, &stderr, env(map[string]string{
		llm.EnvBaseURL: endpoint.URL + "/v1", llm.EnvModel: "fake/model:1", llm.EnvAPIKey: "test-key",
	}))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	res, b := readResults(t, filepath.Join(dir, "comparison-llm-fake-model-1.json"))
	if res.ProposerKind != "llm" || !strings.Contains(res.Proposer, "fake/model:1") || res.FisherP == nil {
		t.Errorf("results: kind %q proposer %q p %v", res.ProposerKind, res.Proposer, res.FisherP)
	}
	if bytes.Contains(b, []byte("test-key")) {
		t.Error("the API key is in the results")
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("%d LLM calls, want 4 (2 prompts × 2 pipelines)", n)
	}
	codes := map[string]string{}
	for _, tr := range res.Trials {
		codes[tr.Prompt+" "+tr.Pipeline] = tr.Classification.Code
	}
	want := map[string]string{
		"S01 verified": "F0", "S01 assertion-only": "F0",
		"U01 verified": agent.CodeCorrectRefusal, "U01 assertion-only": "F3",
	}
	// Without an executor the codes are the same: admitted, not executed.
	for k, v := range want {
		if codes[k] != v {
			t.Errorf("%s: %s, want %s", k, codes[k], v)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--reps", "0"},
		{"--bogus"},
		{"extra"},
		{"--proposer", "llm"},
		{"--proposer", "oracle"},
		{"--only", "Z99"},
	} {
		err := Main(context.Background(), append(args, "--out", t.TempDir(), "-q"), io.Discard, io.Discard, env(nil))
		if !errors.Is(err, errUsage) {
			t.Errorf("%v: err %v, want a usage error", args, err)
		}
	}
}
