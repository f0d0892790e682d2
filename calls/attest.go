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
	f, err := s.st.get(ctx, hash)
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
