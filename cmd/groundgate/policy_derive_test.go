package main

import (
	"encoding/json"
	"os"
	"testing"
)

// A policy with derive goes in over REST (the route's spelling probe
// knows the member), and a misspelt derive is still refused by name.
func TestDerivePolicyOverREST(t *testing.T) {
	raw, err := os.ReadFile("../../policy/testdata/airline.json")
	if err != nil {
		t.Fatal(err)
	}
	var set map[string]json.RawMessage
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	ts := startServerOn(t, "", t.TempDir())
	auth := []string{"Authorization", "Bearer " + testToken}
	if r := ts.do("PUT", "/v1/policies/cancel_window", string(set["cancel_window"]), auth...); r.status != 201 {
		t.Fatalf("PUT a deriving policy: %d %s", r.status, r.body)
	}
	bad := `{"smtlib": "(declare-const x Bool)", "bind": {}, "Derive": {"x": "true"}, "allow": "x", "applies_to": ["tool"]}`
	if r := ts.do("PUT", "/v1/policies/bad", bad, auth...); r.status != 400 {
		t.Errorf("PUT with Derive: %d %s", r.status, r.body)
	}
}
