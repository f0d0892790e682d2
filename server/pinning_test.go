package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/internal/app"
)

// Over REST, like an outside auditor: a grounding executed before and
// after a behaviour-changing edit of its family (PUT of a new clip bound)
// gives one execution hash; replaying the footprint after the edit
// matches at every layer.
func TestGroundingIDDeterminesExecution(t *testing.T) {
	a := startWith(t, app.Config{AdminToken: token})
	id := a.groundFX(2)
	before := a.json("POST", "/v1/executions", `{"grounding": "`+id+`"}`, http.StatusCreated)

	entry := a.json("GET", "/v1/registry/capabilities/MOM_WZS", "", http.StatusOK)
	impl := entry["impl"].(map[string]any)
	impl["expr"] = strings.Replace(impl["expr"].(string), "-1 1)", "-3 3)", 1)
	body := map[string]any{}
	for _, k := range []string{"name", "kind", "sem", "alg", "impl", "disc"} {
		body[k] = entry[k]
	}
	b, _ := json.Marshal(body)
	if r := a.do("PUT", "/v1/registry/capabilities/MOM_WZS", b, "Authorization", "Bearer "+token); r.status != http.StatusOK {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	if got := a.json("GET", "/v1/registry/capabilities/MOM_WZS", "", http.StatusOK)["identity"]; got == entry["identity"] {
		t.Fatal("the edit did not change the identity")
	}

	after := a.json("POST", "/v1/executions", `{"grounding": "`+id+`"}`, http.StatusCreated)
	if after["hash"] != before["hash"] || after["registry_version"] != before["registry_version"] {
		t.Fatalf("the grounding ran %v at version %v after the edit, %v at version %v before", after["hash"], after["registry_version"], before["hash"], before["registry_version"])
	}
	rep := a.json("POST", "/v1/executions/"+before["hash"].(string)+"/replay", "", http.StatusOK)
	if rep["match"] != true {
		t.Fatalf("replay after the edit: %v", rep)
	}
	// Grounded anew, the same request runs the new behaviour.
	if again := a.json("POST", "/v1/executions", `{"grounding": "`+a.groundFX(2)+`"}`, http.StatusCreated); again["hash"] == before["hash"] {
		t.Fatal("a grounding made after the edit ran the old behaviour")
	}
}
