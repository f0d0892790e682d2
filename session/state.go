package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/session/statekey"
)

// StateVersion names the trusted state's schema (docs/sessions.md, "The
// trusted state"). It is not contract.SchemaVersion ("groundgate.state/v1"),
// which names the trading kinds' key-value state: one name, one schema.
const StateVersion = "groundgate.session-state/v1"

// State is a session's trusted state: the results the gateway received in
// the session, in order, from admitted calls whose postconditions held.
// Its JSON (the form rules read and the digest covers) is
//
//	{"latest":  {TOOL: {"arguments": ARGS, "result": VALUE}},
//	 "results": {TOOL: {KEY: VALUE}},
//	 "version": "groundgate.session-state/v1"}
//
// TOOL is the capability name U.T; KEY is Key(ARGS), the call's arguments
// written NAME=VALUE&…; VALUE is ResultValue of the CallToolResult. A later
// result under the same tool and key replaces the earlier one; latest[TOOL]
// is the last result of the tool, whatever its arguments. The state with
// no result is {} — the state outside a session, calls.EmptyState — so a
// decision that read nothing reads one state, in a session or not.
//
// A State is immutable: With returns a new one. The zero State is empty.
type State struct {
	results map[string]map[string]json.RawMessage // tool → key → value, canonical
	latest  map[string]Latest                     // tool → its last result
	n       int                                   // results held
	canon   []byte                                // RFC 8785 form when n > 0
	digest  hashing.Digest                        // SHA-256 of canon when n > 0
}

// Latest is a tool's last result and the arguments of the call that
// returned it.
type Latest struct {
	Arguments json.RawMessage `json:"arguments"` // canonical; {} for a call without any
	Result    json.RawMessage `json:"result"`    // canonical, as in results
}

// stateDoc is the state's JSON: exactly the hashed fields.
type stateDoc struct {
	Latest  map[string]Latest                     `json:"latest"`
	Results map[string]map[string]json.RawMessage `json:"results"`
	Version string                                `json:"version"`
}

// Observation is a result filed in the state: under the tool Tool and the
// key of Arguments, the value Value (ResultValue of the CallToolResult the
// gateway received). A call's result is filed under its own tool and
// arguments, and may also be filed where the tool's configuration says
// the same object is read (a write that returns the reservation it
// changed, filed where get_reservation_details files it, so that a later
// rule does not read the reservation as it was before the write).
type Observation struct {
	Tool      string
	Arguments json.RawMessage
	Value     json.RawMessage
}

// Observe is the observation a call's own result makes: under the called
// tool and its arguments, ResultValue of the CallToolResult the gateway
// received. ok is false when the result files nothing (isError).
func Observe(tool string, arguments, result json.RawMessage) (o Observation, ok bool, err error) {
	v, ok, err := ResultValue(result)
	if err != nil || !ok {
		return Observation{}, false, err
	}
	return Observation{Tool: tool, Arguments: arguments, Value: v}, true, nil
}

// Limits bound a session. Zero fields take the defaults.
type Limits struct {
	MaxResults     int // results in the state (default 1024)
	MaxBytes       int // the state's canonical JSON (default 1 MiB)
	MaxPromptBytes int // a turn's prompt (default 64 KiB)
	MaxFactsBytes  int // a turn's facts, RFC 8785 (default 16 KiB)
}

// The default limits.
const (
	DefaultMaxResults     = 1024
	DefaultMaxBytes       = 1 << 20
	DefaultMaxPromptBytes = 64 << 10
	DefaultMaxFactsBytes  = 16 << 10
)

func (l Limits) withDefaults() Limits {
	if l.MaxResults <= 0 {
		l.MaxResults = DefaultMaxResults
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxPromptBytes <= 0 {
		l.MaxPromptBytes = DefaultMaxPromptBytes
	}
	if l.MaxFactsBytes <= 0 {
		l.MaxFactsBytes = DefaultMaxFactsBytes
	}
	return l
}

// emptyState is the empty state's canonical form.
var emptyState = []byte("{}")

// Len is the number of results the state holds.
func (s *State) Len() int { return s.n }

// Result returns the value filed under tool and key.
func (s *State) Result(tool, key string) (json.RawMessage, bool) {
	v, ok := s.results[tool][key]
	return v, ok
}

// LatestOf returns tool's last result.
func (s *State) LatestOf(tool string) (Latest, bool) {
	l, ok := s.latest[tool]
	return l, ok
}

// Canonical returns the state's RFC 8785 form: {} when it holds no
// result. The caller must not change it.
func (s *State) Canonical() []byte {
	if s.n == 0 {
		return emptyState
	}
	return s.canon
}

// Digest is the state's digest: SHA-256 of Canonical (a call footprint's
// state layer, SPEC §14).
func (s *State) Digest() hashing.Digest {
	if s.n == 0 {
		return emptyDigest
	}
	return s.digest
}

var emptyDigest = hashing.SumSHA256(emptyState)

func (s *State) encode() []byte {
	raw, err := hashing.Canonical(stateDoc{Latest: s.latest, Results: s.results, Version: StateVersion})
	if err != nil {
		// Every value was canonical JSON when it was filed.
		panic(fmt.Sprintf("session: encode state: %v", err))
	}
	return raw
}

// With returns the state with obs filed in order, or an error wrapping
// ErrInvalid (an observation that is not well formed) or ErrTooLarge (the
// result would take the state past lim); s itself never changes.
func (s *State) With(lim Limits, obs ...Observation) (*State, error) {
	lim = lim.withDefaults()
	if len(obs) == 0 {
		return s, nil
	}
	next := &State{results: maps.Clone(s.results), latest: maps.Clone(s.latest), n: s.n}
	if next.results == nil {
		next.results, next.latest = map[string]map[string]json.RawMessage{}, map[string]Latest{}
	}
	copied := map[string]bool{}
	for i, o := range obs {
		args, key, err := keyOf(o.Arguments)
		if err != nil {
			return nil, fmt.Errorf("%w: observation %d: %v", ErrInvalid, i, err)
		}
		if o.Tool == "" {
			return nil, fmt.Errorf("%w: observation %d: no tool", ErrInvalid, i)
		}
		val, err := hashing.CanonicalizeJSON(o.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: observation %d: value: %v", ErrInvalid, i, hashing.Reason(err))
		}
		m := next.results[o.Tool]
		if !copied[o.Tool] {
			m = maps.Clone(m)
			if m == nil {
				m = map[string]json.RawMessage{}
			}
			next.results[o.Tool], copied[o.Tool] = m, true
		}
		if _, ok := m[key]; !ok {
			next.n++
		}
		m[key] = val
		next.latest[o.Tool] = Latest{Arguments: args, Result: val}
	}
	if next.n > lim.MaxResults {
		return nil, fmt.Errorf("%w: %d results, at most %d", ErrTooLarge, next.n, lim.MaxResults)
	}
	next.canon = next.encode()
	if n := len(next.canon); n > lim.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, n, lim.MaxBytes)
	}
	next.digest = hashing.SumSHA256(next.canon)
	return next, nil
}

// Key is the key a call's result is filed under in its tool's map: every
// argument, as NAME=VALUE, in RFC 8785 order of the names, joined by "&".
// A string VALUE is the string itself; any other value is its RFC 8785
// text (5, true, null, [1,2], {"a":1}). In names and values, "%", "&" and
// "=" are written %25, %26 and %3D, and nothing else is escaped. A call
// without arguments (none, null or {}) has the key "".
//
//	{"reservation_id": "ZFA04Y"}              reservation_id=ZFA04Y
//	{"origin": "JFK", "date": "2024-05-20"}   date=2024-05-20&origin=JFK
//
// Every argument counts, because the gateway cannot know which of a tool's
// arguments name the object it reads and which only shape the answer: two
// calls with different arguments never share a key, and a rule that needs
// the reservation a cancel_reservation(reservation_id) call names writes
// the key from that call's own arguments. The one collision left is a
// string and another value with the same text ("5" and 5) for the same
// argument, which only a schema allowing both admits; the later result
// then replaces the earlier.
func Key(arguments json.RawMessage) (string, error) {
	return statekey.Key(arguments)
}

// keyOf returns the canonical arguments ({} for none) and their key.
func keyOf(arguments json.RawMessage) (json.RawMessage, string, error) {
	return statekey.Of(arguments)
}

// ResultValue is the value a CallToolResult files in the state, in RFC
// 8785 form: its structuredContent when it has one; else, when its content
// is one text block, the JSON that text holds (τ-bench's tools answer
// json.dumps text), or the text as a JSON string when it holds none; else
// its content list. A result whose isError is true files nothing (ok is
// false): the tool failed, and what it said is not a fact about the world.
func ResultValue(result json.RawMessage) (value json.RawMessage, ok bool, err error) {
	// Not CheckStrict: a result may hold members that differ only in
	// case (DecodeState says why the state keeps them).
	if _, err := hashing.CanonicalizeJSON(result); err != nil {
		return nil, false, fmt.Errorf("%w: result: %s", ErrInvalid, hashing.Reason(err))
	}
	var top struct {
		Content    []jsontext.Value `json:"content"`
		IsError    *bool            `json:"isError"`
		Structured jsontext.Value   `json:"structuredContent"`
	}
	if err := hashing.DecodePartFields(result, &top); err != nil {
		return nil, false, fmt.Errorf("%w: not a CallToolResult: %s", ErrInvalid, hashing.Reason(err))
	}
	if top.IsError != nil && *top.IsError {
		return nil, false, nil
	}
	var raw []byte
	switch {
	case len(top.Structured) > 0 && top.Structured.Kind() != 'n':
		raw = top.Structured
	case len(top.Content) == 1:
		var text struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := hashing.DecodePartFields(top.Content[0], &text); err == nil && text.Type == "text" && text.Text != nil {
			if v, err := hashing.CanonicalizeJSON([]byte(*text.Text)); err == nil {
				return v, true, nil
			}
			v, err := hashing.Canonical(*text.Text)
			return v, err == nil, err
		}
		fallthrough
	default:
		items := make([][]byte, len(top.Content))
		for i, c := range top.Content {
			items[i] = c
		}
		raw = append(append([]byte("["), bytes.Join(items, []byte(","))...), ']')
	}
	v, err := hashing.CanonicalizeJSON(raw)
	if err != nil {
		return nil, false, fmt.Errorf("%w: result: %s", ErrInvalid, hashing.Reason(err))
	}
	return v, true, nil
}

// DecodeState reads a state from its canonical form, as Canonical writes
// it, and nothing else: {} is the empty state; any other document must
// hold at least one result, name StateVersion, agree with itself (each
// latest entry is the result filed under its tool and the key of its
// arguments) and be its own RFC 8785 form.
//
// It does not use hashing.DecodeStrict's whole-document check, on purpose:
// that check refuses two keys that differ only in case, which a state
// legitimately holds (results under reservation_id=ab12 and
// reservation_id=AB12; upstream results whose members differ in case). One
// spelling is kept the stricter way: the bytes must be their own RFC 8785
// form, and the structure decodes with exact names and no unknown member.
func DecodeState(raw []byte) (*State, error) {
	if bytes.Equal(raw, emptyState) {
		return &State{}, nil
	}
	canon, err := hashing.CanonicalizeJSON(raw)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(canon, raw) {
		return nil, fmt.Errorf("%w: state is not in its RFC 8785 form", hashing.ErrMalformed)
	}
	var doc stateDoc
	if err := hashing.DecodePart(raw, &doc); err != nil {
		return nil, err
	}
	if doc.Version != StateVersion {
		return nil, fmt.Errorf("%w: state version %q, want %q", hashing.ErrMalformed, clip(doc.Version, 64), StateVersion)
	}
	s := &State{results: doc.Results, latest: doc.Latest}
	if s.results == nil || s.latest == nil {
		return nil, fmt.Errorf("%w: state without results or latest", hashing.ErrMalformed)
	}
	for tool, m := range s.results {
		if len(m) == 0 {
			return nil, fmt.Errorf("%w: state: %q has no results", hashing.ErrMalformed, clip(tool, 64))
		}
		if _, ok := s.latest[tool]; !ok {
			return nil, fmt.Errorf("%w: state: %q has results and no latest", hashing.ErrMalformed, clip(tool, 64))
		}
		s.n += len(m)
	}
	if s.n == 0 {
		return nil, fmt.Errorf("%w: a state without results is {}", hashing.ErrMalformed)
	}
	for tool, l := range s.latest {
		args, key, err := keyOf(l.Arguments)
		if err != nil || !bytes.Equal(args, l.Arguments) || l.Result == nil {
			return nil, fmt.Errorf("%w: state: latest %q: arguments and result must be present, arguments an object", hashing.ErrMalformed, clip(tool, 64))
		}
		if v, ok := s.results[tool][key]; !ok || !bytes.Equal(v, l.Result) {
			return nil, fmt.Errorf("%w: state: latest %q is not the result filed under %q", hashing.ErrMalformed, clip(tool, 64), clip(key, 64))
		}
	}
	s.canon = s.encode()
	if !bytes.Equal(s.canon, raw) {
		return nil, fmt.Errorf("%w: state does not re-encode to its bytes", hashing.ErrMalformed)
	}
	s.digest = hashing.SumSHA256(s.canon)
	return s, nil
}

// clip shortens text quoted in an error.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
