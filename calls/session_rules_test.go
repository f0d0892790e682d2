package calls

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/registry"
)

// A decision's session reaches the contract and the policies: a clause
// that read()s a result the state lacks fails F9 naming the call (Next),
// and one the state holds is read; the policy request carries the
// session.
func TestSessionRules(t *testing.T) {
	const state = `{"latest":{"airline.get_reservation_details":{"arguments":{"reservation_id":"ZFA04Y"},"result":{"cabin":"economy"}}},"results":{"airline.get_reservation_details":{"reservation_id=ZFA04Y":{"cabin":"economy"}}},"version":"groundgate.session-state/v1"}`
	con := &contract.Contract{Pre: []contract.Clause{{Name: "economy_only", Message: "economy only",
		Expr: `read("airline.get_reservation_details", {"reservation_id": arguments.reservation_id}).cabin == "economy" && facts.reason == "health" && now > timestamp("2024-01-01T00:00:00Z")`}}}
	c := registry.Capability{Entry: registry.Entry{Name: "airline.cancel_reservation", Kind: registry.KindTool, Tool: &registry.ToolLayers{Sem: registry.ToolSemantic{Contract: con}}}}
	s := &Service{opts: Options{Contracts: contract.NewCache(8)}, sessions: contract.NewSessionCache(4)}
	now := time.Date(2024, 5, 14, 20, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, args string
		next       string
	}{
		{"held", `{"reservation_id":"ZFA04Y"}`, ""},
		{"missing", `{"reservation_id":"NOPE00"}`, `{"tool":"airline.get_reservation_details","arguments":{"reservation_id":"NOPE00"}}`},
	} {
		d := &decision{capb: c, args: []byte(tc.args), state: []byte(state), facts: []byte(`{"reason":"health"}`), now: now}
		fs, err := s.preconditionsOf(d)
		if err != nil {
			t.Fatal(err)
		}
		if tc.next == "" {
			if len(fs) != 0 {
				t.Fatalf("%s: %+v", tc.name, fs)
			}
			continue
		}
		if len(fs) != 1 || fs[0].Next == nil || !strings.Contains(fs[0].Detail, "call it first") {
			t.Fatalf("%s: %+v", tc.name, fs)
		}
		raw, _ := json.Marshal(fs[0])
		if !strings.Contains(string(raw), `"next":`+tc.next) {
			t.Fatalf("%s: %s", tc.name, raw)
		}
	}
	// Outside a session: {} state, no now: the clause is not evaluable.
	fs, err := s.preconditionsOf(&decision{capb: c, args: []byte(`{"reservation_id":"ZFA04Y"}`)})
	if err != nil || len(fs) != 1 {
		t.Fatalf("%+v %v", fs, err)
	}
	raw, _ := json.Marshal(fs[0])
	if strings.Contains(string(raw), `"next"`) != true {
		t.Fatalf("outside a session, the read still names the call: %s", raw)
	}
	plain, _ := json.Marshal(ground.Failure{Field: "arguments", Code: ground.F9, Codes: []ground.Code{ground.F9}, Detail: "d"})
	if string(plain) != `{"field":"arguments","code":"F9","codes":["F9"],"detail":"d"}` {
		t.Fatalf("a failure without next: %s", plain)
	}
	r := s.policyRequest(&decision{capb: c, args: []byte(`{}`), state: []byte(state), now: now})
	if r.Session == nil || !r.Session.Now.Equal(now) || r.Session.State["version"] != "groundgate.session-state/v1" || r.Tool != c.Name {
		t.Fatalf("%+v", r)
	}
}
