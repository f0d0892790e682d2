package calls

import (
	"context"
	"errors"
	"fmt"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/hashing"
)

// Signer signs in-toto statements (attest.Signer).
type Signer interface {
	Sign(ctx context.Context, st *attest.Statement) ([]byte, error)
}

var _ Signer = (*attest.Signer)(nil)

// ErrNoSigner is Attest's error on a Service without a signer. REST: 404.
var ErrNoSigner = errors.New("this server signs no attestations")

// Attest returns the DSSE envelope over an in-toto statement about the
// stored call (SPEC §13, §14): subject groundgate-call:HASH, predicate the
// footprint's stored bytes. A record that fails its check is never signed.
func (s *Service) Attest(ctx context.Context, hash hashing.Digest) ([]byte, error) {
	if s.opts.Signer == nil {
		return nil, ErrNoSigner
	}
	f, err := s.get(ctx, hash)
	if err != nil {
		return nil, err
	}
	raw, err := hashing.Canonical(f)
	if err != nil {
		return nil, fmt.Errorf("calls: encode footprint: %w", err)
	}
	ms := attest.CallMaterials(f.Identity, f.Discovery, f.Layers.Policies, f.Layers.Upstream)
	return s.opts.Signer.Sign(ctx, attest.NewCallStatement(f.Hash, raw, ms))
}

// CheckAttested is attest.CallCheck for call attestations: the signed
// footprint must be what the store would serve under hash — it decodes
// strictly, names hash, passes Footprint.Check (every layer it can
// re-derive, and the call hash from the seven layers) and is its own
// canonical form — and the materials it gives are attest.CallMaterials
// recomputed from it.
func CheckAttested(hash hashing.Digest, raw []byte) ([]attest.ResourceDescriptor, error) {
	f, err := decodeRecord(hash, raw)
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", hash, err)
	}
	return attest.CallMaterials(f.Identity, f.Discovery, f.Layers.Policies, f.Layers.Upstream), nil
}

// Verifier returns an attest.Verifier with keys that verifies both kinds
// of attestation: executions (as attest.Verify) and calls (CheckAttested).
func Verifier(keys ...attest.PublicKey) attest.Verifier {
	return attest.Verifier{Keys: keys, CheckCall: CheckAttested}
}

// VerifyAttestation checks an envelope, an execution's or a call's, with
// the trusted keys and returns its statement; the errors are attest's
// (attest.ErrBadSignature, attest.ErrNotAttestation, attest.ErrFootprint,
// attest.ErrTooLarge, attest.ErrNoKey).
func VerifyAttestation(envelope []byte, keys ...attest.PublicKey) (*attest.Statement, error) {
	return Verifier(keys...).Verify(envelope)
}
