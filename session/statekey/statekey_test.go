package statekey

import "testing"

func TestKey(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{``, ""},
		{`null`, ""},
		{`{}`, ""},
		{`{"reservation_id": "ZFA04Y"}`, "reservation_id=ZFA04Y"},
		{`{"origin": "JFK", "date": "2024-05-20"}`, "date=2024-05-20&origin=JFK"},
		{`{"n": 5, "b": true, "l": [1, 2]}`, "b=true&l=[1,2]&n=5"},
		{`{"a&b": "x=y%"}`, "a%26b=x%3Dy%25"},
	} {
		got, err := Key([]byte(tc.args))
		if err != nil || got != tc.want {
			t.Errorf("Key(%s) = %q, %v; want %q", tc.args, got, err, tc.want)
		}
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"a":`} {
		if _, err := Key([]byte(bad)); err == nil {
			t.Errorf("Key(%s): no error", bad)
		}
	}
}
