package attest

import "github.com/groundgate/groundgate/errkind"

// Sentinel errors, returned wrapped with context; match them with
// errors.Is.
var (
	// ErrTooLarge is returned by Verify for an envelope over
	// MaxEnvelopeBytes, before any of it is decoded.
	ErrTooLarge = errkind.New(errkind.TooLarge, "attestation too large")

	// ErrNotAttestation is returned by Verify for input that is not a DSSE
	// envelope over a groundgate statement: malformed JSON or base64, a
	// payload type other than PayloadType, a statement type other than
	// StatementType, a predicate type other than PredicateType or
	// CallPredicateType (the latter only when the Verifier has CheckCall),
	// or a subject that does not name one execution (one call).
	ErrNotAttestation = errkind.New(errkind.Invalid, "not a groundgate attestation")

	// ErrBadSignature is returned by Verify when no signature on the
	// envelope verifies under any of the given keys: the payload or the
	// signature was altered, or it was signed by another key.
	ErrBadSignature = errkind.New(errkind.Invalid, "no valid signature")

	// ErrNoKey is returned by Verify when it is given no key to verify
	// with.
	ErrNoKey = errkind.New(errkind.NotFound, "no verification key")

	// ErrFootprint is returned by Verify when the signed footprint does
	// not recompute to the subject's execution (or call) hash, or the
	// materials disagree with it: the statement attests to something that
	// is not that execution (or call).
	ErrFootprint = errkind.New(errkind.Invalid, "footprint does not match the subject")

	// ErrKeyPermissions is returned when a private key file is readable
	// or writable by group or others, or is not a regular file: the key
	// may have leaked, so it is not used.
	ErrKeyPermissions = errkind.New(errkind.Refused, "key file permissions too open")

	// ErrKeyType is returned for a key file that is not one PEM block
	// holding an Ed25519 key: PKCS#8 "PRIVATE KEY" for a signing key,
	// that or a SubjectPublicKeyInfo "PUBLIC KEY" for a verification key.
	ErrKeyType = errkind.New(errkind.Invalid, "not an Ed25519 key")
)
