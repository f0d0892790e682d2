package session_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"cel.dev/cel-go/cel"

	"github.com/groundgate/groundgate/session"
)

// basicEconomy is docs/sessions.md's example rule, policy.md's "Basic
// economy flights cannot be modified", as a precondition of
// airline.update_reservation_flights: the reservation the call names, as
// get_reservation_details returned it in this session, is not basic
// economy, or the call keeps its flights (a cabin change, which policy.md
// allows every reservation).
const basicEconomy = `state.results["airline.get_reservation_details"]["reservation_id=" + arguments.reservation_id].cabin != "basic_economy" ||
  (size(arguments.flights) == size(state.results["airline.get_reservation_details"]["reservation_id=" + arguments.reservation_id].flights) &&
   arguments.flights.all(f, state.results["airline.get_reservation_details"]["reservation_id=" + arguments.reservation_id].flights.exists(g,
     g.flight_number == f.flight_number && g.date == f.date)))`

// sameAsLatest reads the state by latest: the last reservation read is the
// one the call names (the form a static SMT pointer can bind).
const sameAsLatest = `state.latest["airline.get_reservation_details"].arguments.reservation_id == arguments.reservation_id`

// TestRulesReadTheState evaluates the example rules with cel-go over the
// state's JSON, as the wiring will hand it to contracts: the schema reads
// as the docs say, and a result the state lacks makes the rule not
// evaluable (a refusal that names the read to make first), never true.
func TestRulesReadTheState(t *testing.T) {
	env, err := cel.NewEnv(
		cel.Variable("state", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("arguments", cel.MapType(cel.StringType, cel.DynType)),
	)
	if err != nil {
		t.Fatal(err)
	}
	programs := map[string]cel.Program{}
	for _, src := range []string{basicEconomy, sameAsLatest} {
		ast, iss := env.Compile(src)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", src, iss.Err())
		}
		if programs[src], err = env.Program(ast); err != nil {
			t.Fatal(err)
		}
	}
	read := func(rid, cabin string) session.Observation {
		v, ok, err := session.ResultValue(textResult(fmt.Sprintf(`{"reservation_id": %q, "cabin": %q, "flights": [
			{"origin": "JFK", "destination": "SEA", "flight_number": "HAT100", "date": "2024-05-20", "price": 120},
			{"origin": "SEA", "destination": "JFK", "flight_number": "HAT101", "date": "2024-05-25", "price": 130}]}`, rid, cabin)))
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		return session.Observation{Tool: getRes, Arguments: json.RawMessage(fmt.Sprintf(`{"reservation_id": %q}`, rid)), Value: v}
	}
	for _, tc := range []struct {
		name  string
		reads []session.Observation
		rid   string
		kept  bool // the call keeps the reservation's flights
		rule  string
		want  any // bool, or nil: not evaluable
	}{
		{"basic economy changing flights refused", []session.Observation{read("ZFA04Y", "basic_economy")}, "ZFA04Y", false, basicEconomy, false},
		{"basic economy changing cabin allowed", []session.Observation{read("ZFA04Y", "basic_economy")}, "ZFA04Y", true, basicEconomy, true},
		{"economy changing flights allowed", []session.Observation{read("ZFA04Y", "economy")}, "ZFA04Y", false, basicEconomy, true},
		{"reads the reservation the call names", []session.Observation{read("ZFA04Y", "basic_economy"), read("XYZ123", "economy")}, "ZFA04Y", false, basicEconomy, false},
		{"not read: not evaluable", []session.Observation{read("XYZ123", "economy")}, "ZFA04Y", false, basicEconomy, nil},
		{"empty state: not evaluable", nil, "ZFA04Y", false, basicEconomy, nil},
		{"latest names the call's reservation", []session.Observation{read("XYZ123", "economy"), read("ZFA04Y", "economy")}, "ZFA04Y", false, sameAsLatest, true},
		{"latest names another", []session.Observation{read("ZFA04Y", "economy"), read("XYZ123", "economy")}, "ZFA04Y", false, sameAsLatest, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &session.State{}
			for _, o := range tc.reads {
				st = with(t, st, o)
			}
			flights := `[{"flight_number": "HAT100", "date": "2024-05-20"}, {"flight_number": "HAT103", "date": "2024-05-26"}]`
			if tc.kept {
				flights = `[{"flight_number": "HAT101", "date": "2024-05-25"}, {"flight_number": "HAT100", "date": "2024-05-20"}]`
			}
			args := json.RawMessage(fmt.Sprintf(`{"reservation_id": %q, "cabin": "economy", "flights": %s, "payment_id": "credit_card_4421486"}`, tc.rid, flights))
			var stateVal, argsVal map[string]any
			if err := json.Unmarshal(st.Canonical(), &stateVal); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(args, &argsVal); err != nil {
				t.Fatal(err)
			}
			out, _, err := programs[tc.rule].Eval(map[string]any{"state": stateVal, "arguments": argsVal})
			switch {
			case tc.want == nil && err == nil:
				t.Fatalf("evaluated to %v over a state without the reservation", out)
			case tc.want != nil && (err != nil || out.Value() != tc.want):
				t.Fatalf("= %v, %v; want %v", out, err, tc.want)
			}
		})
	}
	// The key the rule writes is the key the state files under.
	if k, _ := session.Key(json.RawMessage(`{"reservation_id": "ZFA04Y"}`)); k != "reservation_id=ZFA04Y" {
		t.Fatalf("Key = %q", k)
	}
}
