package session_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/session"
)

const (
	getRes  = "airline.get_reservation_details"
	getUser = "airline.get_user_details"
	// reservation is get_reservation_details' answer, as τ-bench's tool
	// writes it (json.dumps: ", " and ": ").
	reservation = `{"reservation_id": "ZFA04Y", "user_id": "mia_li_3668", "cabin": "basic_economy", "insurance": "no", "total_baggages": 1}`
)

// textResult is a CallToolResult with one text block.
func textResult(text string) json.RawMessage {
	raw, err := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
	if err != nil {
		panic(err)
	}
	return raw
}

func obs(t *testing.T, tool, args, value string) session.Observation {
	t.Helper()
	return session.Observation{Tool: tool, Arguments: json.RawMessage(args), Value: json.RawMessage(value)}
}

func with(t *testing.T, s *session.State, o ...session.Observation) *session.State {
	t.Helper()
	next, err := s.With(session.Limits{}, o...)
	if err != nil {
		t.Fatalf("With: %v", err)
	}
	return next
}

func TestEmptyStateIsOutsideASessionsState(t *testing.T) {
	var s session.State
	if got := string(s.Canonical()); got != "{}" {
		t.Fatalf("empty state = %s, want {}", got)
	}
	if s.Digest() != calls.EmptyState {
		t.Fatalf("empty state digest %s, calls.EmptyState %s", s.Digest(), calls.EmptyState)
	}
	d, err := session.DecodeState([]byte("{}"))
	if err != nil || d.Len() != 0 || d.Digest() != calls.EmptyState {
		t.Fatalf("DecodeState({}) = %v, %v", d, err)
	}
}

func TestKey(t *testing.T) {
	for _, tc := range []struct {
		name, args, want string
	}{
		{"none", ``, ""},
		{"null", `null`, ""},
		{"empty", `{}`, ""},
		{"one string", `{"reservation_id": "ZFA04Y"}`, "reservation_id=ZFA04Y"},
		{"names sorted", `{"origin": "JFK", "date": "2024-05-20", "destination": "SEA"}`, "date=2024-05-20&destination=SEA&origin=JFK"},
		{"number canonical", `{"n": 1.0, "m": 1e2}`, "m=100&n=1"},
		{"bool null", `{"b": true, "z": null}`, "b=true&z=null"},
		{"nested canonical", `{"o": {"y": [1, 2], "x": "a"}}`, `o={"x":"a","y":[1,2]}`},
		{"escapes", `{"a&b": "c=d%e"}`, "a%26b=c%3Dd%25e"},
		{"nested escapes", `{"o": {"k": "a=b"}}`, `o={"k":"a%3Db"}`},
		{"unicode kept", `{"city": "Zürich"}`, "city=Zürich"},
		{"string that looks like a number", `{"id": "12345"}`, "id=12345"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := session.Key(json.RawMessage(tc.args))
			if err != nil || got != tc.want {
				t.Fatalf("Key(%s) = %q, %v; want %q", tc.args, got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"a": 1, "a": 2}`, `{"a":`, `5`} {
		if k, err := session.Key(json.RawMessage(bad)); err == nil {
			t.Errorf("Key(%s) = %q, want an error", bad, k)
		}
	}
}

func TestResultValue(t *testing.T) {
	for _, tc := range []struct {
		name, result, want string
		ok                 bool
	}{
		{"structured", `{"content": [{"type": "text", "text": "x"}], "structuredContent": {"b": 1, "a": 2}}`, `{"a":2,"b":1}`, true},
		{"text holding JSON", string(textResult(reservation)), `{"cabin":"basic_economy","insurance":"no","reservation_id":"ZFA04Y","total_baggages":1,"user_id":"mia_li_3668"}`, true},
		{"text holding a number", string(textResult("3.0")), `3`, true},
		{"plain text", string(textResult("Reservation cancelled")), `"Reservation cancelled"`, true},
		{"tool error", `{"content": [{"type": "text", "text": "Error: reservation not found"}], "isError": true}`, ``, false},
		{"isError false", `{"content": [{"type": "text", "text": "[1]"}], "isError": false}`, `[1]`, true},
		{"two blocks", `{"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}`, `[{"text":"a","type":"text"},{"text":"b","type":"text"}]`, true},
		{"an image", `{"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}`, `[{"data":"AA==","mimeType":"image/png","type":"image"}]`, true},
		{"no content", `{}`, `[]`, true},
		{"null structured", `{"content": [{"type": "text", "text": "{}"}], "structuredContent": null}`, `{}`, true},
		{"members in two cases kept", string(textResult(`{"Name": "a", "name": "b"}`)), `{"Name":"a","name":"b"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok, err := session.ResultValue(json.RawMessage(tc.result))
			if err != nil || ok != tc.ok || string(v) != tc.want {
				t.Fatalf("ResultValue = %s, %v, %v; want %s, %v", v, ok, err, tc.want, tc.ok)
			}
		})
	}
	for _, bad := range []string{`[]`, `{"content": 5}`, `{"a": 1, "a": 1}`, `nope`} {
		if _, _, err := session.ResultValue(json.RawMessage(bad)); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("ResultValue(%s): %v, want ErrInvalid", bad, err)
		}
	}
}

// goldenState is the state after reading a reservation and its user: its
// bytes and digest are pinned, so that they are the same in every run.
const goldenState = `{"latest":{"airline.get_reservation_details":{"arguments":{"reservation_id":"ZFA04Y"},"result":{"cabin":"basic_economy","insurance":"no","reservation_id":"ZFA04Y","total_baggages":1,"user_id":"mia_li_3668"}},"airline.get_user_details":{"arguments":{"user_id":"mia_li_3668"},"result":{"membership":"gold","user_id":"mia_li_3668"}}},"results":{"airline.get_reservation_details":{"reservation_id=ZFA04Y":{"cabin":"basic_economy","insurance":"no","reservation_id":"ZFA04Y","total_baggages":1,"user_id":"mia_li_3668"}},"airline.get_user_details":{"user_id=mia_li_3668":{"membership":"gold","user_id":"mia_li_3668"}}},"version":"groundgate.session-state/v1"}`

func TestStateDigestIsCanonical(t *testing.T) {
	user := `{"user_id": "mia_li_3668", "membership": "gold"}`
	userReordered := `{ "membership" : "gold" , "user_id" : "mia_li_3668" }`
	resReordered := `{"user_id": "mia_li_3668", "total_baggages": 1.0, "insurance": "no", "reservation_id": "ZFA04Y", "cabin": "basic_economy"}`
	a := with(t, &session.State{}, obs(t, getRes, `{"reservation_id": "ZFA04Y"}`, reservation), obs(t, getUser, `{"user_id":"mia_li_3668"}`, user))
	b := with(t, with(t, &session.State{}, obs(t, getUser, `{ "user_id" : "mia_li_3668" }`, userReordered)),
		obs(t, getRes, `{"reservation_id":"ZFA04Y"}`, resReordered))
	if string(a.Canonical()) != goldenState {
		t.Fatalf("state =\n%s\nwant\n%s", a.Canonical(), goldenState)
	}
	if a.Digest() != b.Digest() || string(b.Canonical()) != goldenState {
		t.Fatalf("insertion order and key order changed the state:\n%s\n%s", a.Canonical(), b.Canonical())
	}
	if want := hashing.MustParse("sha256:" + sha256Hex(goldenState)); a.Digest() != want {
		t.Fatalf("digest %s, want %s", a.Digest(), want)
	}
	if a.Len() != 2 {
		t.Fatalf("Len = %d", a.Len())
	}
}

func TestStateReplacesAndTracksLatest(t *testing.T) {
	s := with(t, &session.State{},
		obs(t, getRes, `{"reservation_id": "A"}`, `{"cabin": "economy"}`),
		obs(t, getRes, `{"reservation_id": "B"}`, `{"cabin": "business"}`))
	before := string(s.Canonical())
	s2 := with(t, s, obs(t, getRes, `{"reservation_id": "A"}`, `{"cabin": "basic_economy"}`))
	if string(s.Canonical()) != before {
		t.Fatal("With changed the state it was called on")
	}
	if s2.Len() != 2 {
		t.Fatalf("replacing a result grew the state to %d", s2.Len())
	}
	if v, _ := s2.Result(getRes, "reservation_id=A"); string(v) != `{"cabin":"basic_economy"}` {
		t.Fatalf("A = %s", v)
	}
	if v, _ := s2.Result(getRes, "reservation_id=B"); string(v) != `{"cabin":"business"}` {
		t.Fatalf("B = %s", v)
	}
	l, ok := s2.LatestOf(getRes)
	if !ok || string(l.Arguments) != `{"reservation_id":"A"}` || string(l.Result) != `{"cabin":"basic_economy"}` {
		t.Fatalf("latest = %s %s", l.Arguments, l.Result)
	}
	if _, ok := s2.LatestOf(getUser); ok {
		t.Fatal("latest of a tool never called")
	}
}

func TestStateLimits(t *testing.T) {
	s := with(t, &session.State{}, obs(t, getRes, `{"reservation_id": "A"}`, `"a"`))
	before := string(s.Canonical())
	for _, tc := range []struct {
		name string
		lim  session.Limits
		o    session.Observation
		err  error
	}{
		{"results", session.Limits{MaxResults: 1}, obs(t, getRes, `{"reservation_id": "B"}`, `"b"`), session.ErrTooLarge},
		{"bytes", session.Limits{MaxBytes: len(before) + 20}, obs(t, getRes, `{"reservation_id": "B"}`, `"`+strings.Repeat("b", 100)+`"`), session.ErrTooLarge},
		{"bad arguments", session.Limits{}, obs(t, getRes, `[1]`, `1`), session.ErrInvalid},
		{"bad value", session.Limits{}, obs(t, getRes, `{}`, `{"a":1,"a":2}`), session.ErrInvalid},
		{"no tool", session.Limits{}, obs(t, "", `{}`, `1`), session.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.With(tc.lim, tc.o); !errors.Is(err, tc.err) {
				t.Fatalf("With: %v, want %v", err, tc.err)
			}
			if string(s.Canonical()) != before {
				t.Fatal("a refused With changed the state")
			}
		})
	}
	// Replacing a result under the results bound is no growth.
	if _, err := s.With(session.Limits{MaxResults: 1}, obs(t, getRes, `{"reservation_id": "A"}`, `"a2"`)); err != nil {
		t.Fatalf("replace at the bound: %v", err)
	}
}

func TestDecodeState(t *testing.T) {
	s, err := session.DecodeState([]byte(goldenState))
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Canonical()) != goldenState || s.Len() != 2 {
		t.Fatalf("round trip: %s", s.Canonical())
	}
	v, ok := s.Result(getRes, "reservation_id=ZFA04Y")
	if !ok || !strings.Contains(string(v), `"cabin":"basic_economy"`) {
		t.Fatalf("result = %s", v)
	}
	// Keys that differ only in case are two results, as ids in two cases
	// are two objects.
	cased := with(t, &session.State{}, obs(t, getRes, `{"reservation_id": "ab12"}`, `1`), obs(t, getRes, `{"reservation_id": "AB12"}`, `{"K":1,"k":2}`))
	if d, err := session.DecodeState(cased.Canonical()); err != nil || d.Digest() != cased.Digest() {
		t.Fatalf("keys in two cases: %v", err)
	}
	for _, tc := range []struct{ name, doc string }{
		{"not canonical", strings.Replace(goldenState, `{"latest":`, `{ "latest":`, 1)},
		{"version", strings.Replace(goldenState, "session-state/v1", "session-state/v2", 1)},
		{"unknown member", strings.Replace(goldenState, `"version"`, `"extra":1,"version"`, 1)},
		{"no results", `{"latest":{},"results":{},"version":"groundgate.session-state/v1"}`},
		{"a tool without results", `{"latest":{},"results":{"t":{}},"version":"groundgate.session-state/v1"}`},
		{"results without latest", `{"latest":{},"results":{"t":{"":1}},"version":"groundgate.session-state/v1"}`},
		{"latest not filed", `{"latest":{"t":{"arguments":{"a":1},"result":1}},"results":{"t":{"":1}},"version":"groundgate.session-state/v1"}`},
		{"latest differs", `{"latest":{"t":{"arguments":{},"result":2}},"results":{"t":{"":1}},"version":"groundgate.session-state/v1"}`},
		{"latest arguments null", `{"latest":{"t":{"arguments":null,"result":1}},"results":{"t":{"":1}},"version":"groundgate.session-state/v1"}`},
		{"latest without result", `{"latest":{"t":{"arguments":{}}},"results":{"t":{"":1}},"version":"groundgate.session-state/v1"}`},
		{"missing version", `{"latest":{"t":{"arguments":{},"result":1}},"results":{"t":{"":1}}}`},
		{"empty spelt out", `{"latest":{},"results":{}}`},
		{"not an object", `[]`},
		{"duplicate", `{"latest":{},"latest":{}}`},
		{"empty", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := session.DecodeState([]byte(tc.doc)); !errors.Is(err, hashing.ErrMalformed) {
				t.Fatalf("DecodeState: %v, want ErrMalformed", err)
			}
		})
	}
}

// FuzzDecodeState: whatever DecodeState accepts is its own canonical
// form, and decodes again to the same state.
func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(goldenState))
	f.Add([]byte("{}"))
	f.Add([]byte(`{"latest":{"t":{"arguments":{},"result":1}},"results":{"t":{"":1}},"version":"groundgate.session-state/v1"}`))
	f.Add([]byte(`{"latest":{"t":{"arguments":{"a":"x=y"},"result":[1,"é"]}},"results":{"t":{"a=x%3Dy":[1,"é"]}},"version":"groundgate.session-state/v1"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := session.DecodeState(raw)
		if err != nil {
			return
		}
		if string(s.Canonical()) != string(raw) {
			t.Fatalf("accepted %q, which re-encodes to %q", raw, s.Canonical())
		}
		again, err := session.DecodeState(s.Canonical())
		if err != nil || again.Digest() != s.Digest() || again.Len() != s.Len() {
			t.Fatalf("canonical form does not decode again: %v", err)
		}
	})
}

// FuzzKey: a key is a function of the arguments' canonical form, and two
// different canonical argument objects of string values give two keys.
func FuzzKey(f *testing.F) {
	f.Add(`{"reservation_id": "ZFA04Y"}`, "a", "b")
	f.Add(`{"a&b": "c=d%e"}`, "a=", "&b")
	f.Fuzz(func(t *testing.T, args, v1, v2 string) {
		k, err := session.Key(json.RawMessage(args))
		if err != nil {
			return
		}
		canon, err := hashing.CanonicalizeJSON([]byte(args))
		if err != nil {
			if strings.TrimSpace(args) == "" || strings.TrimSpace(args) == "null" {
				return
			}
			t.Fatalf("Key accepted %q, which does not canonicalise", args)
		}
		if k2, err := session.Key(canon); err != nil || k2 != k {
			t.Fatalf("Key of the canonical form %q = %q, %v; want %q", canon, k2, err, k)
		}
		a, _ := json.Marshal(map[string]string{"x": v1, "y": v2})
		b, _ := json.Marshal(map[string]string{"x": v1 + v2})
		ka, errA := session.Key(a)
		kb, errB := session.Key(b)
		if errA == nil && errB == nil && ka == kb {
			t.Fatalf("%s and %s share the key %q", a, b, ka)
		}
	})
}
