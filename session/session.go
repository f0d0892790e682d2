// Package session is the durable core of SPEC §15: a conversation's turns
// (the user's words and the discovery evidence each grounded), the calls
// made in it, and the trusted state those calls built — the results the
// gateway itself received, in order, from admitted calls whose
// postconditions held, never anything an agent or a caller asserts.
//
// It is a library over the storage layer (package store; the buckets
// session.* of the registry's bbolt file);
// the server, the calls gate and MCP wire it (issue 28). The caller
// discovers, decides and forwards; the store records, and keeps the state.
//
// # Ids and tokens
//
// A session's id is "sha256:" + hex(SHA-256(JCS({"agent_discovery",
// "nonce", "version"}))), its genesis: a digest like every other id the
// API gives (it parses as hashing.Digest, keys a bucket, fits a URL), made
// unguessable by a 256-bit random nonce, and checked on every read (a
// record whose genesis does not hash to its key is corrupt). Nothing in it
// depends on the clock.
//
// Its token is a separate 256-bit random secret, "ggs_" + base64url,
// returned once by Create. The store keeps only its SHA-256 and compares
// digests in constant time; a token reaches the session it was made for
// and no other.
//
// # Durability
//
// Each method that writes is one store transaction, committed (fsynced)
// before it returns: AppendCall writes the call record, the state it
// leaves and the session's header at once, so no reader and no restart
// ever sees a call without its state or a state without its call.
package session

import (
	"encoding/json"
	"maps"
	"time"

	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
)

// RecordVersion names the stored session record's schema.
const RecordVersion = "groundgate.session/v1"

// Session is a session as GET /v1/sessions/{id} shows it: its turns, its
// calls in order, and its state's digest.
type Session struct {
	ID             hashing.Digest `json:"id"`
	Created        time.Time      `json:"created"`
	AgentDiscovery bool           `json:"agent_discovery"`
	Closed         bool           `json:"closed"`
	ClosedAt       *time.Time     `json:"closed_at,omitempty"`
	Turns          []Turn         `json:"turns"`
	Calls          []CallRecord   `json:"calls"`
	// State is the digest of the session's trusted state now: the state
	// the next call is decided on.
	State hashing.Digest `json:"state"`
	// Results is how many results the state holds.
	Results int `json:"results"`
}

// Evidence lists the turns' discovery ids in order: what grounds the
// session's calls.
func (s *Session) Evidence() []hashing.Digest {
	out := make([]hashing.Digest, len(s.Turns))
	for i, t := range s.Turns {
		out[i] = t.Evidence
	}
	return out
}

// Facts merges the turns' facts, a later turn's member replacing an
// earlier one's: the JSON object rules read as facts ({} when no turn has
// any), in RFC 8785 form.
func (s *Session) Facts() json.RawMessage {
	merged := map[string]json.RawMessage{}
	for _, t := range s.Turns {
		if len(t.Facts) == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(t.Facts, &m); err != nil {
			continue // checked when recorded and on every read
		}
		maps.Copy(merged, m)
	}
	raw, err := hashing.Canonical(merged)
	if err != nil {
		return json.RawMessage("{}")
	}
	return raw
}

// Who spoke a turn's words.
const (
	ByHost  = "host"  // the user's words, sent by the host (admin token)
	ByAgent = "agent" // the agent's own words (agent_discovery sessions)
)

// Turn is one turn: the words, the discovery result they gave, and when.
type Turn struct {
	Seq      int            `json:"seq"`
	Prompt   string         `json:"prompt"`
	Evidence hashing.Digest `json:"evidence"` // the discover result's id
	By       string         `json:"by"`       // ByHost or ByAgent
	// Facts are what the host asserted with this turn's words (a JSON
	// object, RFC 8785; absent when none): what the user said that no tool
	// returns — a cancellation's reason, an explicit yes. Rules read the
	// turns' facts merged (Facts), never the agent's: only the host (admin
	// token) sends them.
	Facts json.RawMessage `json:"facts,omitempty"`
	At    time.Time       `json:"at"`
}

// Decision is what Γ decided about a call.
type Decision string

// The decisions.
const (
	Admitted Decision = "admitted"
	Refused  Decision = "refused"
)

// OutcomeOK is the outcome of a forwarded call whose result passed its
// checks (calls.OutcomeOK): the only outcome whose result enters the
// state. Every other outcome (a tool error, a result refused by its
// output schema or postconditions: F10, an upstream failure) is recorded
// and files nothing.
const OutcomeOK = "ok"

// Call is a call to record: what the footprint says, and where its result
// goes in the state.
type Call struct {
	// Request is the call's request digest: SHA-256 of JCS({"tool",
	// "arguments"}), the footprint's request layer. Every call has one.
	Request hashing.Digest
	// Hash is the call footprint's hash; zero for a call Γ refused, which
	// has no footprint (calls.Refusal without Call).
	Hash     hashing.Digest
	Tool     string // U.T
	Decision Decision
	// Outcome is the footprint's outcome: OutcomeOK or another (empty for
	// a refused call).
	Outcome string
	// Read is the footprint's State layer: the digest of what the
	// decision read besides the call (calls.StateRead: the session, its
	// state's digest, the host's facts, the time); zero when not given. It
	// is recorded, not checked: the caller holds the session while it
	// decides, forwards and records.
	Read hashing.Digest
	// Observe files the result: only on an admitted call with OutcomeOK,
	// ignored otherwise. Their values must come from the CallToolResult
	// the gateway received (ResultValue), never from a caller.
	Observe []Observation
	// Footprint and FootprintRaw, when set, are the call's footprint
	// (calls.Session.Keep's), stored in the same transaction as the call.
	Footprint    *calls.Footprint
	FootprintRaw []byte
	// Failures are why Γ refused the call (calls.Refusal's, as the 422
	// answered them): a refused call has no footprint, so its record is
	// where an auditor reads the rule that refused it. Only on a refused
	// call.
	Failures []ground.Failure
}

// CallRecord is a call as the session keeps it.
type CallRecord struct {
	Seq     int            `json:"seq"`
	Request hashing.Digest `json:"request"`
	// Hash is the footprint's hash; absent for a call refused before it
	// was forwarded.
	Hash     *hashing.Digest `json:"hash,omitempty"`
	Tool     string          `json:"tool"`
	Decision Decision        `json:"decision"`
	Outcome  string          `json:"outcome"`
	At       time.Time       `json:"at"`
	// Read is the footprint's State layer (calls.StateRead's digest: the
	// session's state as the decision read it, the facts and the time),
	// when the caller gave it.
	Read *hashing.Digest `json:"read,omitempty"`
	// State is the state's digest after the call: the state the next call
	// reads (a new one when this call filed a result, the one it read
	// otherwise).
	State hashing.Digest `json:"state"`
	// Filed lists where the call's result went in the state (never null).
	Filed []Filed `json:"filed"`
	// Unfiled says why an admitted call with outcome ok filed nothing
	// (the state is full, or an observation was not well formed): the
	// error's text; empty otherwise.
	Unfiled string `json:"unfiled,omitempty"`
	// Failures are why a refused call was refused (codes, fields, rules,
	// the next call to make); absent on an admitted call, and on the
	// refused calls of records made before they were kept.
	Failures []ground.Failure `json:"failures,omitempty"`
}

// Filed is one place a result was filed: results[Tool][Key], Key being
// Key(Arguments), whose value has the digest Value (SHA-256 of its RFC
// 8785 form, kept in the bucket session.values).
type Filed struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Key       string          `json:"key"`
	Value     hashing.Digest  `json:"value"`
}

// Created is what Create returns: the session and its token, given once.
type Created struct {
	Session *Session
	Token   string
}

// genesis is what a session's id hashes.
type genesis struct {
	AgentDiscovery bool   `json:"agent_discovery"`
	Nonce          string `json:"nonce"`
	Version        string `json:"version"`
}

func (g genesis) id() hashing.Digest {
	raw, err := hashing.Canonical(g)
	if err != nil {
		panic("session: genesis: " + err.Error()) // three scalars always encode
	}
	return hashing.SumSHA256(raw)
}

// header is a session's stored record (bucket session.records).
type header struct {
	ID             hashing.Digest `json:"id"`
	Version        string         `json:"version"`
	Nonce          string         `json:"nonce"`
	AgentDiscovery bool           `json:"agent_discovery"`
	Created        time.Time      `json:"created"`
	TokenSHA256    hashing.Digest `json:"token_sha256"`
	Closed         bool           `json:"closed"`
	ClosedAt       *time.Time     `json:"closed_at,omitempty"`
	Turns          int            `json:"turns"`
	Calls          int            `json:"calls"`
	State          hashing.Digest `json:"state"`
	Results        int            `json:"results"`
}

// valueDigest is the digest a Filed records.
func valueDigest(v json.RawMessage) hashing.Digest { return hashing.SumSHA256(v) }
