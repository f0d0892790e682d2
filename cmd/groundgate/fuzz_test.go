package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestFuzzCommand: `groundgate fuzz --json` prints SPEC §12's report —
// registry, version, findings with id, kind, capability and detail,
// suggestions — and the same seed twice prints the same bytes.
func TestFuzzCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "f.db")
	code, out, errOut := runCLI(t, "fuzz", "--db", db, "--json", "--seed", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Registry    string `json:"registry"`
		Version     uint64 `json:"version"`
		Complete    bool   `json:"complete"`
		Suggestions []any  `json:"suggestions"`
		Findings    []struct {
			ID, Kind, Capability, Detail string
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Registry == "" || r.Version != 1 || !r.Complete || r.Suggestions == nil || len(r.Findings) == 0 {
		t.Fatalf("report %+v", r)
	}
	for _, f := range r.Findings {
		if f.ID == "" || f.Kind == "" || f.Capability == "" || f.Detail == "" {
			t.Fatalf("finding %+v", f)
		}
	}
	if _, again, _ := runCLI(t, "fuzz", "--db", db, "--json", "--seed", "3"); again != out {
		t.Fatal("the same seed printed different reports")
	}
	if code, _, _ := runCLI(t, "fuzz", "--db", db, "--seconds", "0"); code != 2 {
		t.Fatalf("--seconds 0: exit %d", code)
	}
}
