package attest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/hashing"
)

// MaxEnvelopeBytes bounds the envelopes Verify reads: far above any
// footprint the executor's budget lets it store, small enough to decode in
// memory.
const MaxEnvelopeBytes = 64 << 20

// maxSignatures bounds the signatures Verify tries: each costs a hash of
// the whole payload per key.
const maxSignatures = 8

// Sign returns the DSSE envelope over st: the payload is st's RFC 8785
// form, signed once with s under its key id. The same statement and key
// always give the same bytes.
func (s *Signer) Sign(ctx context.Context, st *Statement) ([]byte, error) {
	payload, err := hashing.Canonical(st)
	if err != nil {
		return nil, fmt.Errorf("attest: encode statement: %w", err)
	}
	es, err := dsse.NewEnvelopeSigner(dsseSigner{s})
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	env, err := es.SignPayload(ctx, PayloadType, payload)
	if err != nil {
		return nil, fmt.Errorf("attest: sign: %w", err)
	}
	out, err := hashing.Canonical(env)
	if err != nil {
		return nil, fmt.Errorf("attest: encode envelope: %w", err)
	}
	return out, nil
}

// FootprintCheck decodes a footprint's bytes and checks them against the
// execution hash, as the executor checks a stored record.
type FootprintCheck func(hash hashing.Digest, raw []byte) (*execution.Footprint, error)

// CallCheck decodes a call footprint's bytes and checks them against the
// call hash as the gateway checks a stored record, and returns the
// materials the footprint gives (CallMaterials). Package calls has it
// (calls.CheckAttested): calls imports attest, so attest cannot call it.
type CallCheck func(hash hashing.Digest, raw []byte) ([]ResourceDescriptor, error)

// Verifier checks attestations against trusted keys.
type Verifier struct {
	// Keys are the trusted public keys; a signature by any one suffices.
	Keys []PublicKey
	// CheckFootprint checks the signed footprint; nil means the
	// executor's own check of a stored record (execution.CheckFootprint:
	// every layer recomputed from the body, canonical form).
	CheckFootprint FootprintCheck
	// CheckCall checks the footprint of a call attestation
	// (CallPredicateType, SPEC §14); nil refuses call attestations
	// (ErrNotAttestation). calls.Verifier and calls.VerifyAttestation set
	// it, and verify either kind.
	CheckCall CallCheck
}

// Verify checks an execution attestation with the trusted keys and the
// default footprint check; see Verifier.Verify. A call attestation is
// refused: calls.VerifyAttestation verifies both kinds.
func Verify(envelope []byte, keys ...PublicKey) (*Statement, error) {
	return Verifier{Keys: keys}.Verify(envelope)
}

// Verify checks an envelope and returns its statement. In order: the size
// (ErrTooLarge), the envelope's shape and payload type (ErrNotAttestation),
// a signature by a trusted key over DSSE's PAE of the payload
// (ErrBadSignature, ErrNoKey), the statement's type, predicate type and
// subject (ErrNotAttestation), then that the footprint recomputes to the
// subject's hash and the materials agree with it (ErrFootprint). Nothing
// in the payload is looked at before the signature holds.
//
// The predicate type says which kind: PredicateType, an execution
// (subject "groundgate-execution:HASH", checked by CheckFootprint);
// CallPredicateType, a call (subject "groundgate-call:HASH", checked by
// CheckCall, refused when it is nil).
func (v Verifier) Verify(envelope []byte) (*Statement, error) {
	if len(envelope) > MaxEnvelopeBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(envelope), MaxEnvelopeBytes)
	}
	var env dsse.Envelope
	if err := hashing.DecodeStrict(envelope, &env); err != nil {
		return nil, fmt.Errorf("%w: the envelope: %v", ErrNotAttestation, err)
	}
	if env.PayloadType != PayloadType {
		return nil, fmt.Errorf("%w: payloadType %q, want %q", ErrNotAttestation, env.PayloadType, PayloadType)
	}
	if _, err := env.DecodeB64Payload(); err != nil {
		return nil, fmt.Errorf("%w: the payload: %v", ErrNotAttestation, err)
	}
	switch n := len(env.Signatures); {
	case n == 0:
		return nil, fmt.Errorf("%w: the envelope has no signature", ErrBadSignature)
	case n > maxSignatures:
		return nil, fmt.Errorf("%w: %d signatures, at most %d are read", ErrNotAttestation, n, maxSignatures)
	}
	verifiers := make([]dsse.Verifier, 0, len(v.Keys))
	var ids []string
	for _, k := range v.Keys {
		// The id is derived again, so a key built by hand verifies too.
		k, err := NewPublicKey(k.Key)
		if err != nil {
			return nil, err
		}
		// One verifier per key: the library reports a key that verifies
		// twice on standard output.
		if !slices.Contains(ids, k.ID) {
			ids = append(ids, k.ID)
			verifiers = append(verifiers, dsseVerifier{k})
		}
	}
	if len(verifiers) == 0 {
		return nil, ErrNoKey
	}
	ev, err := dsse.NewEnvelopeVerifier(verifiers...)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	_, payload, err := ev.VerifyAndDecode(context.Background(), &env)
	if err != nil {
		// The library's own message counts signatures against a
		// threshold; say what it means here.
		return nil, fmt.Errorf("%w: none of the envelope's %d signature(s) verifies under key %s", ErrBadSignature, len(env.Signatures), strings.Join(ids, ", "))
	}

	var st Statement
	if err := hashing.DecodeStrict(payload, &st); err != nil {
		return nil, fmt.Errorf("%w: the statement: %v", ErrNotAttestation, err)
	}
	if st.Type != StatementType {
		return nil, fmt.Errorf("%w: _type %q, want %q", ErrNotAttestation, st.Type, StatementType)
	}
	switch st.PredicateType {
	case PredicateType:
	case CallPredicateType:
		if v.CheckCall == nil {
			return nil, fmt.Errorf("%w: a call attestation (predicateType %q): verify it with calls.VerifyAttestation", ErrNotAttestation, st.PredicateType)
		}
		return v.verifyCall(&st)
	default:
		return nil, fmt.Errorf("%w: predicateType %q, want %q or %q", ErrNotAttestation, st.PredicateType, PredicateType, CallPredicateType)
	}
	hash, err := subjectHash(st.Subject, SubjectPrefix)
	if err != nil {
		return nil, err
	}
	check := v.CheckFootprint
	if check == nil {
		check = execution.CheckFootprint
	}
	fp, err := check(hash, st.Predicate.Footprint)
	if err != nil {
		if errors.Is(err, ErrFootprint) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrFootprint, err)
	}
	var disc hashing.Digest
	for _, m := range st.Predicate.Materials {
		if m.Name == MaterialDiscovery {
			if disc, err = hashing.Parse("sha256:" + m.Digest["sha256"]); err != nil || len(m.Digest) != 1 {
				return nil, fmt.Errorf("%w: the discovery material's digest %v", ErrFootprint, m.Digest)
			}
		}
	}
	if err := sameMaterials(st.Predicate.Materials, materials(fp, disc)); err != nil {
		return nil, err
	}
	return &st, nil
}

// verifyCall checks a signed call statement: its subject, then the
// footprint with CheckCall and the materials against what it gives.
func (v Verifier) verifyCall(st *Statement) (*Statement, error) {
	hash, err := subjectHash(st.Subject, CallSubjectPrefix)
	if err != nil {
		return nil, err
	}
	want, err := v.CheckCall(hash, st.Predicate.Footprint)
	if err != nil {
		if errors.Is(err, ErrFootprint) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrFootprint, err)
	}
	if err := sameMaterials(st.Predicate.Materials, want); err != nil {
		return nil, err
	}
	return st, nil
}

// sameMaterials compares the signed materials with those the footprint
// gives, in their canonical forms (ErrFootprint).
func sameMaterials(signed, fromFootprint []ResourceDescriptor) error {
	want, err := hashing.Canonical(fromFootprint)
	if err != nil {
		return fmt.Errorf("attest: encode materials: %w", err)
	}
	got, err := hashing.Canonical(signed)
	if err != nil {
		return fmt.Errorf("attest: encode materials: %w", err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%w: the materials are %s; the footprint gives %s", ErrFootprint, got, want)
	}
	return nil
}

// subjectHash is the hash the one subject names, by both its name (prefix
// and the hash) and its digest.
func subjectHash(subject []ResourceDescriptor, prefix string) (hashing.Digest, error) {
	if len(subject) != 1 {
		return hashing.Digest{}, fmt.Errorf("%w: %d subjects, want one", ErrNotAttestation, len(subject))
	}
	s := subject[0]
	hx, ok := s.Digest["sha256"]
	if !ok || len(s.Digest) != 1 {
		return hashing.Digest{}, fmt.Errorf("%w: the subject's digest %v is not {\"sha256\": …}", ErrNotAttestation, s.Digest)
	}
	// hashing.Parse takes only lowercase hex of the right length.
	h, err := hashing.Parse("sha256:" + hx)
	if err != nil {
		return hashing.Digest{}, fmt.Errorf("%w: the subject's digest: %v", ErrNotAttestation, err)
	}
	if s.Name != prefix+h.String() {
		return hashing.Digest{}, fmt.Errorf("%w: the subject is named %q, its digest says %s", ErrNotAttestation, s.Name, prefix+h.String())
	}
	return h, nil
}
