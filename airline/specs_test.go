package airline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/groundgate/groundgate/internal/testio"
)

// The embedded tools.json is the shared one, and names the 14 tools Call
// knows.
func TestSpecs(t *testing.T) {
	specs, err := Specs()
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 14 {
		t.Fatalf("%d specs", len(specs))
	}
	for _, s := range specs {
		if _, ok := signatures[s.Name]; !ok {
			t.Errorf("%s: no signature", s.Name)
		}
		var p struct {
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(s.Parameters, &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Required) != len(signatures[s.Name].params) {
			t.Errorf("%s: required %q, signature %q", s.Name, p.Required, signatures[s.Name].params)
		}
	}
	shared, err := os.ReadFile(filepath.Join(testio.SharedData(t, "tau-airline"), "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(shared) != string(toolsJSON) {
		t.Error("airline/tools.json differs from shared/data/tau-airline/tools.json")
	}
}

// τ-bench's errors for arguments: an unknown one, missing ones.
func TestCallArguments(t *testing.T) {
	w := &World{}
	for _, c := range []struct{ name, args, want string }{
		{"get_user_details", `{"user_id":"x","extra":1}`, "Error: GetUserDetails.invoke() got an unexpected keyword argument 'extra'"},
		{"search_direct_flight", `{"date":"2024-05-20"}`, "Error: SearchDirectFlight.invoke() missing 2 required positional arguments: 'origin' and 'destination'"},
		{"update_reservation_baggages", `{}`, "Error: UpdateReservationBaggages.invoke() missing 4 required positional arguments: 'reservation_id', 'total_baggages', 'nonfree_baggages', and 'payment_id'"},
		{"no_such_tool", `{}`, "Unknown action no_such_tool"},
		{"think", `{"thought":"x"}`, ""},
		{"transfer_to_human_agents", ``, "Error: TransferToHumanAgents.invoke() missing 1 required positional argument: 'summary'"},
	} {
		if got := w.Call(c.name, []byte(c.args)); got != c.want {
			t.Errorf("%s(%s) = %q, want %q", c.name, c.args, got, c.want)
		}
	}
	if got := w.Call("calculate", []byte(`{"expression": 5}`)); !IsError(got) {
		t.Errorf("calculate(5) = %q, want an error", got)
	}
}
