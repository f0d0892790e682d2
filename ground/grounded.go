package ground

import (
	"github.com/groundgate/groundgate/hashing"
)

// Grounded is an admitted request: the executor's only input. Its fields
// are unexported, so outside this package it can only be obtained from
// Gate.Ground or Gate.Load — the wall, enforced by the compiler. It carries
// the exact request Γ decided on; the executor runs that value.
type Grounded struct {
	id  hashing.Digest
	rec Record
}

func newGrounded(id hashing.Digest, rec Record) *Grounded {
	return &Grounded{id: id, rec: rec}
}

// Valid reports whether g was made by the gate (a zero Grounded is not).
func (g *Grounded) Valid() bool {
	return g != nil && !g.id.IsZero() && g.rec.Decision.Admitted && g.rec.Discovery != nil
}

// ID is the grounding record's id.
func (g *Grounded) ID() hashing.Digest { return g.id }

// Request returns a copy of the admitted request.
func (g *Grounded) Request() Request { return g.rec.Request.clone() }

// Discovery is the id of the evidence that grounded the request.
func (g *Grounded) Discovery() hashing.Digest { return *g.rec.Discovery }

// RegistryVersion is the registry version the request was admitted at.
func (g *Grounded) RegistryVersion() uint64 { return g.rec.RegistryVersion }

// Registry is the registry hash the request was admitted at.
func (g *Grounded) Registry() hashing.Digest { return g.rec.Registry }

// Policies is the digest of the policy set that authorised the request:
// the one it was grounded under, or, when Load re-decided it, the set in
// force then.
// Zero for a record older than policies.
func (g *Grounded) Policies() hashing.Digest {
	if g.rec.Policies == nil {
		return hashing.Digest{}
	}
	return *g.rec.Policies
}

// DataDigest is the BLAKE3 of the data source whose facts a policy read at
// admission, if one did: the request may run on those bytes only.
func (g *Grounded) DataDigest() (hashing.Digest, bool) {
	if g.rec.DataDigest == nil {
		return hashing.Digest{}, false
	}
	return *g.rec.DataDigest, true
}
