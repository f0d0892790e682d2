package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/groundgate/groundgate/internal/app"
)

// tauClock is τ-bench's airline clock ("The current time is 2024-05-15
// 15:00:00 EST."), as serve --clock fixes it.
var tauClock = time.Date(2024, 5, 15, 15, 0, 0, 0, time.FixedZone("EST", -5*3600))

// buildAirline builds cmd/airline-mcp (τ-bench's airline tools over MCP
// stdio) into the test's temporary directory.
func buildAirline(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "airline-mcp")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/airline-mcp").CombinedOutput(); err != nil {
		t.Fatalf("go build ../cmd/airline-mcp: %v\n%s", err, out)
	}
	return bin
}

// The session routes (SPEC §15) over a real server and the real airline
// upstream, with the clock fixed: every answer, success or problem,
// matches openapi.json — the session opened with the host's facts, a read
// (exempt) filed in the state, a write the words did not ask for (422 F3,
// recorded: the problem's `session`), a turn, the cancellation (filed
// twice, by file_as), the session and its state, isolation (401), and a
// closed session (409).
func TestSessionRoutesMatchOpenAPI(t *testing.T) {
	bin := buildAirline(t)
	a := startWith(t, app.Config{AdminToken: token, Clock: tauClock})
	doc := loadOpenAPIDoc(t)
	admin := []string{"Authorization", "Bearer " + token}
	send := func(method, path, body string, want int, hdr ...string) map[string]any {
		t.Helper()
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		r := a.do(method, path, b, hdr...)
		if r.status != want {
			t.Fatalf("%s %s: %d, want %d: %.800s", method, path, r.status, want, r.body)
		}
		doc.check(t, method, path, r)
		var m map[string]any
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		if os.Getenv("GROUNDGATE_DUMP_SESSION_BODIES") != "" {
			t.Logf("%s %s → %d\n%s", method, path, r.status, r.body)
		}
		return m
	}

	fixture, err := filepath.Abs("../airline/testdata/db")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{
		"transport": "stdio", "command": []string{bin, "--db", fixture}, "ground": "writes",
		"file_as": map[string]any{"cancel_reservation": []any{map[string]any{"tool": "get_reservation_details", "arguments": []string{"reservation_id"}}}},
	})
	send("PUT", "/v1/upstreams/airline", string(cfg), 201, admin...)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(string(a.do("GET", "/v1/upstreams/airline", nil).body), `"connected":true`) {
		if time.Now().After(deadline) {
			t.Fatal("the airline upstream did not connect within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	send("GET", "/v1/upstreams/airline", "", 200)
	send("POST", "/v1/upstreams/airline/sync", `{"apply":true,"overlay":{"cancel_reservation":{"disc":{"aliases":["cancel my reservation","cancel the reservation"]}}}}`, 200, admin...)

	// Opening: admin only, the words and the host's facts checked.
	const open = `{"prompt":"Hi, I am chen_lee_6825 and I want to cancel my reservation JW6LEQ, my plans changed.","facts":{"cancel_reason":"change_of_plan"}}`
	send("POST", "/v1/sessions", open, 401)
	send("POST", "/v1/sessions", `{"prompt":"  "}`, 400, admin...)
	send("POST", "/v1/sessions", `{"prompt":"cancel my reservation","facts":["change_of_plan"]}`, 400, admin...)
	send("POST", "/v1/sessions", `{"prompt":"cancel my reservation","tool":"airline.cancel_reservation"}`, 400, admin...)
	send("POST", "/v1/sessions", fmt.Sprintf(`{"prompt":"cancel my reservation","facts":{"note":%q}}`, strings.Repeat("x", 17<<10)), 413, admin...)
	created := send("POST", "/v1/sessions", open, 201, admin...)
	id, tok := created["id"].(string), created["token"].(string)
	bearer := []string{"Authorization", "Bearer " + tok}
	other := send("POST", "/v1/sessions", `{"prompt":"what is the status of my flight HAT001?"}`, 201, admin...)
	otherTok := []string{"Authorization", "Bearer " + other["token"].(string)}

	// The agent reads the reservation (an exempt read): filed.
	read := send("POST", "/v1/sessions/"+id+"/calls", `{"tool":"airline.get_reservation_details","arguments":{"reservation_id":"JW6LEQ"}}`, 200, bearer...)
	if read["call"].(map[string]any)["read"] == nil || len(read["session"].(map[string]any)["filed"].([]any)) != 1 {
		t.Fatalf("the read: %v", read)
	}
	// A write the words did not ask for: F3, recorded as refused.
	p := send("POST", "/v1/sessions/"+id+"/calls", `{"tool":"airline.update_reservation_baggages","arguments":{"reservation_id":"JW6LEQ","total_baggages":3,"nonfree_baggages":0,"payment_id":"credit_card_4421486"}}`, 422, bearer...)
	if rec, _ := p["session"].(map[string]any); rec == nil || rec["decision"] != "refused" {
		t.Fatalf("F3: %v", p)
	}
	send("POST", "/v1/sessions/"+id+"/calls", `{"tool":"airline.get_reservation_details","arguments":{"reservation_id":"JW6LEQ"},"discovery":"sha256:x"}`, 400, bearer...)
	send("POST", "/v1/sessions/"+id+"/calls", `{"tool":"airline.get_reservation_details","arguments":{"reservation_id":"JW6LEQ"}}`, 401, otherTok...)
	send("POST", "/v1/sessions/"+id+"/calls", `{"tool":"airline.get_reservation_details","arguments":{"reservation_id":"JW6LEQ"}}`, 401)

	// A turn: the host's, with more facts.
	send("POST", "/v1/sessions/"+id+"/turns", `{"prompt":"Yes, please go ahead and cancel it."}`, 401, bearer...)
	send("POST", "/v1/sessions/"+id+"/turns", `{"prompt":"Yes, please go ahead.","agent_discovery":true}`, 400, admin...)
	send("POST", "/v1/sessions/sha256:"+strings.Repeat("0", 64)+"/turns", `{"prompt":"Yes, please go ahead."}`, 404, admin...)
	send("POST", "/v1/sessions/"+id+"/turns", `{"prompt":"Yes, please go ahead and cancel it.","facts":{"confirmed":true}}`, 200, admin...)

	// The cancellation the words asked for: admitted, filed twice.
	cancel := send("POST", "/v1/sessions/"+id+"/calls", `{"tool":"airline.cancel_reservation","arguments":{"reservation_id":"JW6LEQ"}}`, 200, bearer...)
	if n := len(cancel["session"].(map[string]any)["filed"].([]any)); n != 2 {
		t.Fatalf("the cancellation filed %d results: %v", n, cancel)
	}

	// The session and its state, with its token or the admin's; no other.
	send("GET", "/v1/sessions/"+id, "", 200, bearer...)
	send("GET", "/v1/sessions/"+id, "", 200, admin...)
	send("GET", "/v1/sessions/"+id+"/state", "", 200, bearer...)
	send("GET", "/v1/sessions/"+other["id"].(string)+"/state", "", 200, otherTok...)
	send("GET", "/v1/sessions/"+id, "", 401, otherTok...)
	send("GET", "/v1/sessions/"+id+"/state", "", 401)
	send("GET", "/v1/sessions/sha256:"+strings.Repeat("0", 64), "", 404, admin...)
	send("GET", "/v1/sessions/sha256:x", "", 400, admin...)

	// Closing: admin only; idempotent; the record stays, calls and turns
	// are refused.
	send("DELETE", "/v1/sessions/"+id, "", 401, bearer...)
	send("DELETE", "/v1/sessions/"+id, "", 200, admin...)
	send("DELETE", "/v1/sessions/"+id, "", 200, admin...)
	send("POST", "/v1/sessions/"+id+"/calls", `{"tool":"airline.get_user_details","arguments":{"user_id":"chen_lee_6825"}}`, 409, bearer...)
	send("POST", "/v1/sessions/"+id+"/turns", `{"prompt":"And my other reservation?"}`, 409, admin...)
	send("GET", "/v1/sessions/"+id, "", 200, bearer...)
}

// The session routes' examples in openapi.json (requests and answers)
// are valid against their own schemas.
func TestSessionExamplesMatchTheirSchemas(t *testing.T) {
	doc := loadOpenAPIDoc(t)
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	n := 0
	for _, path := range slices.Sorted(func(yield func(string) bool) {
		for p := range doc.paths {
			if strings.HasPrefix(p, "/v1/sessions") && !yield(p) {
				return
			}
		}
	}) {
		for method, op := range doc.paths[path].(map[string]any) {
			op, ok := op.(map[string]any)
			if !ok {
				continue
			}
			base := "openapi.json#/paths/" + esc.Replace(path) + "/" + method
			check := func(ptr string, media map[string]any) {
				for ct, m := range media {
					ex, ok := m.(map[string]any)["example"]
					if !ok {
						continue
					}
					n++
					sch, err := doc.compiler.Compile(ptr + "/content/" + esc.Replace(ct) + "/schema")
					if err != nil {
						t.Fatalf("%s %s: %v", method, path, err)
					}
					raw, _ := json.Marshal(ex)
					inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
					if err != nil {
						t.Fatal(err)
					}
					if err := sch.Validate(inst); err != nil {
						t.Errorf("%s %s: the example at %s does not match its schema: %v", method, path, ptr, err)
					}
				}
			}
			if rb, ok := op["requestBody"].(map[string]any); ok {
				check(base+"/requestBody", rb["content"].(map[string]any))
			}
			for status, r := range op["responses"].(map[string]any) {
				if c, ok := r.(map[string]any)["content"].(map[string]any); ok {
					check(base+"/responses/"+status, c)
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d examples on the session routes", n)
	}
}
