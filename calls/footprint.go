// Package calls is Γ for calls to upstream tools and their footprints
// (SPEC §14): a call {"tool": "U.T", "arguments": {…}} is admitted only
// when the tool is in the registry, was discovered from the user's words
// (or is an exempt read), still means what the evidence matched, takes
// these arguments, has not drifted, and the contracts and policies allow
// it; then it is forwarded, and the footprint of what ran (seven layers,
// one call hash) is stored durably before the answer is sent.
package calls

import (
	"encoding/json"
	"fmt"

	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Layers are a call's seven layer digests (SPEC §14), in order.
type Layers struct {
	Registry hashing.Digest `json:"registry"` // the tool's identity
	Request  hashing.Digest `json:"request"`  // SHA-256 of JCS({"tool", "arguments"})
	Evidence hashing.Digest `json:"evidence"` // the discovery id, or the exemption's digest
	State    hashing.Digest `json:"state"`    // SHA-256 of JCS of the state read ({} outside a session)
	Policies hashing.Digest `json:"policies"` // the policy set in force
	Upstream hashing.Digest `json:"upstream"` // the live tool's tool_digest
	Result   hashing.Digest `json:"result"`   // SHA-256 of JCS of the CallToolResult (or of the failure)
}

// LayerNames are the layers' keys, in hash order.
var LayerNames = []string{"registry", "request", "evidence", "state", "policies", "upstream", "result"}

// List returns the digests in hash order.
func (l Layers) List() []hashing.Digest {
	return []hashing.Digest{l.Registry, l.Request, l.Evidence, l.State, l.Policies, l.Upstream, l.Result}
}

// Hash is the call hash (pinned): SHA-256 over the seven layer digests in
// order, each followed by "\n".
func (l Layers) Hash() hashing.Digest { return hashing.LayerList(l.List()) }

// Footprint is a stored call (SPEC §14's pinned fields, and more).
type Footprint struct {
	Hash      hashing.Digest  `json:"hash"`
	Layers    Layers          `json:"layers"`
	Tool      string          `json:"tool"`
	Identity  hashing.Digest  `json:"identity"`
	Arguments json.RawMessage `json:"arguments"` // RFC 8785 form
	Decision  Decision        `json:"decision"`
	Upstream  UpstreamRef     `json:"upstream"`
	// Result is the result's digest: the Result layer.
	Result hashing.Digest `json:"result"`

	// RegistryVersion is the registry version the call was decided at.
	RegistryVersion uint64 `json:"registry_version"`
	// Effect is the tool's sem.effect: only a read is ever replayed.
	Effect registry.Effect `json:"effect"`
	// Discovery is the evidence's id; absent for an exempt read.
	Discovery *hashing.Digest `json:"discovery,omitempty"`
	// Outcome is OutcomeOK, OutcomeToolError (a result with isError),
	// OutcomeRefusedResult (F10: the result breaks the output schema or a
	// postcondition, and was not passed on) or OutcomeUpstreamError (the
	// upstream failed: Error says how).
	Outcome string     `json:"outcome"`
	Error   *CallError `json:"error,omitempty"`
	// Findings flag result text that addresses the agent (SPEC §12's
	// screen); the result is passed on, flagged. Never null.
	Findings []gateway.Finding `json:"findings"`
	// Read is what the decision read besides the call, in a session (SPEC
	// §15): the State layer is its digest. Absent outside a session, where
	// the State layer is EmptyState.
	Read *StateRead `json:"read,omitempty"`
}

// StateRead is what a call in a session was decided on besides the call
// itself: the session, the digest of its trusted state
// (groundgate.session-state/v1, GET /v1/sessions/{id} lists each call's
// state), the host's facts, and the decision's time. The State layer is
// SHA-256 of its RFC 8785 form, so the time and the facts are inside the
// call hash, and the state is by its digest.
type StateRead struct {
	Facts   json.RawMessage `json:"facts"`
	Now     string          `json:"now"` // RFC 3339, UTC
	Session hashing.Digest  `json:"session"`
	State   hashing.Digest  `json:"state"`
}

// Digest is the State layer of a call that read r.
func (r *StateRead) Digest() (hashing.Digest, error) {
	raw, err := hashing.Canonical(r)
	if err != nil {
		return hashing.Digest{}, fmt.Errorf("calls: state layer: %w", err)
	}
	return hashing.SumSHA256(raw), nil
}

// The outcomes of a forwarded call.
const (
	OutcomeOK            = "ok"
	OutcomeToolError     = "tool-error"
	OutcomeRefusedResult = "refused-result"
	OutcomeUpstreamError = "upstream-error"
)

// Decision is what Γ decided, and what the result checks found.
type Decision struct {
	Admitted bool `json:"admitted"`
	// Grounding is GroundingDiscovered or GroundingExempt.
	Grounding string `json:"grounding"`
	// Words is WordsAgent when the evidence that grounded the call is the
	// agent's own words (a turn of an agent_discovery session, SPEC §15),
	// not the user's; absent otherwise.
	Words string `json:"words,omitempty"`
	// Failures are the result's (F10); never null.
	Failures []ground.Failure `json:"failures"`
}

// WordsAgent marks evidence discovered from the agent's own words.
const WordsAgent = "agent"

// How a call was grounded.
const (
	GroundingDiscovered = "discovered" // the evidence matched the tool
	GroundingExempt     = "exempt"     // a read on an upstream that grounds only writes
)

// UpstreamRef names what answered: the upstream, its server, and the live
// tool's definition (SPEC §14's tool_digest, description included).
type UpstreamRef struct {
	Name       string             `json:"name"`
	Server     gateway.ServerInfo `json:"server"`
	ToolDigest hashing.Digest     `json:"tool_digest"`
}

// CallError is an upstream failure as a footprint records it: the HTTP
// status it was answered with, the problem type and the gateway's words.
type CallError struct {
	Status int    `json:"status"`
	Type   string `json:"type"`
	Detail string `json:"detail"`
}

// RequestDigest is the Request layer: SHA-256 of JCS({"tool", "arguments"}),
// arguments in RFC 8785 form.
func RequestDigest(tool string, args json.RawMessage) (hashing.Digest, error) {
	raw, err := hashing.Canonical(struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}{tool, args})
	if err != nil {
		return hashing.Digest{}, fmt.Errorf("calls: request layer: %w", err)
	}
	return hashing.SumSHA256(raw), nil
}

// ExemptionDigest is the Evidence layer of an exempt read: SHA-256 of the
// JCS of {"exempt": "read", "ground": "writes", "upstream": U}.
func ExemptionDigest(upstream string) hashing.Digest {
	raw, _ := hashing.Canonical(map[string]string{"exempt": "read", "ground": "writes", "upstream": upstream})
	return hashing.SumSHA256(raw)
}

// EmptyState is the State layer outside a session: SHA-256 of "{}".
var EmptyState = hashing.SumSHA256([]byte("{}"))

// errorDigest is the Result layer of a failed call: SHA-256 of the JCS of
// {"error": CallError}.
func errorDigest(e CallError) hashing.Digest {
	raw, _ := hashing.Canonical(map[string]CallError{"error": e})
	return hashing.SumSHA256(raw)
}

// seal computes the call hash and the record's bytes.
func (f *Footprint) seal() ([]byte, error) {
	f.Result = f.Layers.Result
	f.Hash = f.Layers.Hash()
	raw, err := hashing.Canonical(f)
	if err != nil {
		return nil, fmt.Errorf("calls: encode footprint: %w", err)
	}
	return raw, nil
}

// Check re-derives what a stored footprint's bytes must satisfy: the call
// hash from the layers, the Request layer from tool and arguments, the
// Registry layer from the identity, the Result layer from result (or the
// recorded error), the Evidence layer from the discovery id or the
// exemption. It is what registry verify runs on every call record.
func (f *Footprint) Check() error {
	if got := f.Layers.Hash(); got != f.Hash {
		return fmt.Errorf("the layers hash to %s, not %s", got, f.Hash)
	}
	rd, err := RequestDigest(f.Tool, f.Arguments)
	if err != nil {
		return err
	}
	switch {
	case rd != f.Layers.Request:
		return fmt.Errorf("tool and arguments hash to %s, the request layer says %s", rd, f.Layers.Request)
	case f.Identity != f.Layers.Registry:
		return fmt.Errorf("identity %s differs from the registry layer %s", f.Identity, f.Layers.Registry)
	case f.Result != f.Layers.Result:
		return fmt.Errorf("result %s differs from the result layer %s", f.Result, f.Layers.Result)
	case f.Upstream.ToolDigest != f.Layers.Upstream:
		return fmt.Errorf("tool_digest %s differs from the upstream layer %s", f.Upstream.ToolDigest, f.Layers.Upstream)
	case f.Error != nil && errorDigest(*f.Error) != f.Layers.Result:
		return fmt.Errorf("the recorded error hashes to %s, not the result layer", errorDigest(*f.Error))
	}
	state := EmptyState
	if f.Read != nil {
		if state, err = f.Read.Digest(); err != nil {
			return err
		}
	}
	if state != f.Layers.State {
		return fmt.Errorf("the state read hashes to %s, not the state layer %s", state, f.Layers.State)
	}
	switch {
	case f.Discovery != nil && *f.Discovery != f.Layers.Evidence:
		return fmt.Errorf("discovery %s differs from the evidence layer", *f.Discovery)
	case f.Discovery == nil && ExemptionDigest(f.Upstream.Name) != f.Layers.Evidence:
		return fmt.Errorf("an exempt call's evidence layer is not the exemption of %s", f.Upstream.Name)
	}
	return nil
}
