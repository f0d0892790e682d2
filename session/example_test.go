package session_test

import (
	"encoding/json"
	"fmt"

	"github.com/groundgate/groundgate/session"
)

func ExampleKey() {
	for _, args := range []string{
		`{"reservation_id": "ZFA04Y"}`,
		`{"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}`,
		`{"n": 1.0, "ok": true, "q": "a=b&c"}`,
		`{}`,
	} {
		k, _ := session.Key(json.RawMessage(args))
		fmt.Printf("%q\n", k)
	}
	// Output:
	// "reservation_id=ZFA04Y"
	// "date=2024-05-20&destination=SEA&origin=JFK"
	// "n=1&ok=true&q=a%3Db%26c"
	// ""
}

func ExampleState_With() {
	// τ-bench's get_reservation_details answers JSON text.
	result := `{"content": [{"type": "text", "text": "{\"reservation_id\": \"ZFA04Y\", \"cabin\": \"basic_economy\"}"}]}`
	value, _, _ := session.ResultValue(json.RawMessage(result))
	var empty session.State
	st, _ := empty.With(session.Limits{}, session.Observation{
		Tool:      "airline.get_reservation_details",
		Arguments: json.RawMessage(`{"reservation_id": "ZFA04Y"}`),
		Value:     value,
	})
	fmt.Println(string(empty.Canonical()))
	fmt.Println(string(st.Canonical()))
	fmt.Println(st.Digest())
	// Output:
	// {}
	// {"latest":{"airline.get_reservation_details":{"arguments":{"reservation_id":"ZFA04Y"},"result":{"cabin":"basic_economy","reservation_id":"ZFA04Y"}}},"results":{"airline.get_reservation_details":{"reservation_id=ZFA04Y":{"cabin":"basic_economy","reservation_id":"ZFA04Y"}}},"version":"groundgate.session-state/v1"}
	// sha256:3b94bbe50baebe9fdda6451047d1bf8e80953e1a6ea20f9857b52146aed0c0a0
}
