package attest

import (
	"encoding/json"

	"github.com/groundgate/groundgate/hashing"
)

// The pinned names of a call's attestation (SPEC §14): the subject is
// "groundgate-call:" and the call hash.
const (
	CallPredicateType = "https://groundgate.dev/attestation/call/v1"
	CallSubjectPrefix = "groundgate-call:"
)

// Material names of a call, in the order the predicate lists them.
const (
	MaterialTool     = "tool"     // the tool's identity (the registry layer)
	MaterialUpstream = "upstream" // the live tool's definition (tool_digest)
)

// CallMaterials lists what a call was made from: the tool's identity, the
// discovery evidence (absent for an exempt read), the policy set and the
// live tool's definition.
func CallMaterials(identity hashing.Digest, discovery *hashing.Digest, policies, toolDigest hashing.Digest) []ResourceDescriptor {
	ms := []ResourceDescriptor{{Name: MaterialTool, Digest: digestSet(identity)}}
	if discovery != nil {
		ms = append(ms, ResourceDescriptor{Name: MaterialDiscovery, Digest: digestSet(*discovery)})
	}
	return append(ms,
		ResourceDescriptor{Name: MaterialPolicies, Digest: digestSet(policies)},
		ResourceDescriptor{Name: MaterialUpstream, Digest: digestSet(toolDigest)})
}

// NewCallStatement builds the statement about a stored call: footprint is
// its stored bytes (RFC 8785), byte for byte.
func NewCallStatement(hash hashing.Digest, footprint json.RawMessage, materials []ResourceDescriptor) *Statement {
	return &Statement{
		Type:          StatementType,
		Subject:       []ResourceDescriptor{{Name: CallSubjectPrefix + hash.String(), Digest: digestSet(hash)}},
		PredicateType: CallPredicateType,
		Predicate:     Predicate{Footprint: footprint, Materials: materials},
	}
}
