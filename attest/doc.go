// Package attest signs and verifies execution attestations (SPEC §13): a
// DSSE envelope whose payload is an in-toto Statement v1 about one stored
// execution. Calls to upstream tools (SPEC §14) are attested the same way,
// under CallPredicateType and a "groundgate-call:" subject; package calls
// builds and checks their footprints (calls.VerifyAttestation).
//
// # What is signed
//
// The statement's one subject is the execution: name "groundgate-execution:"
// followed by the execution hash, digest {"sha256": the hash without its
// "sha256:" prefix}. Its predicateType is PredicateType and its predicate
// is {"footprint": the stored footprint, byte for byte as stored (it is
// already RFC 8785 canonical JSON), "materials": what the execution was
// made from, as in-toto ResourceDescriptors}. The payload is the
// statement's RFC 8785 form, so one execution and one key always give the
// same envelope bytes (Ed25519 signatures are deterministic).
//
// # Keys
//
// The server's Ed25519 key is a PKCS#8 PEM file ("PRIVATE KEY") of mode
// 0600, created on first use (LoadOrCreate). A key's id is "sha256:" and
// the hex SHA-256 of its public key's DER SubjectPublicKeyInfo — what
// `openssl pkey -pubin -outform DER | sha256sum` prints.
//
// # Verifying
//
// Verify checks the envelope's payload type and signature (DSSE PAE over
// the payload), the statement's type, predicate type and subject, that the
// predicate's footprint recomputes to the subject's hash, and that the
// materials agree with the footprint. docs/attestations.md shows how to do
// the same with public tools.
package attest
