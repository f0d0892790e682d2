package hashing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/gowebpki/jcs"
)

// Canonical returns the RFC 8785 (JCS) bytes of v as encoding/json sees
// it: exactly jcs.Transform(json.Marshal(v)), written in one pass (see
// encode.go). Callers pass a struct holding exactly the fields to be
// hashed.
func Canonical(v any) ([]byte, error) {
	var out []byte
	err := withCanonical(v, func(b []byte) { out = bytes.Clone(b) })
	return out, err
}

// withCanonical passes the canonical bytes of v to use, in scratch space
// that is reused once use returns.
func withCanonical(v any, use func([]byte)) error {
	e := encStates.Get().(*encState)
	b, err := e.encode(e.buf[:0], v)
	if err == nil {
		use(b)
	}
	e.release(b)
	if err != nil {
		// The one-pass encoder stops at whatever the two-step path would
		// fail on, and at values nested too deep to walk safely (cycles):
		// the two-step path then reports the error, or writes the bytes,
		// as it always has.
		b, err := canonicalTwoStep(v)
		if err != nil {
			return err
		}
		use(b)
	}
	return nil
}

// appendCanonical appends the canonical form of v to b, or fails with
// errFallback where the two-step path must decide.
func appendCanonical(b []byte, v any) ([]byte, error) {
	var e encState
	return e.encode(b, v)
}

// canonicalTwoStep is the reference construction the one-pass encoder
// reproduces: encoding/json, then RFC 8785 over the result.
func canonicalTwoStep(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical: marshal: %w", err)
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: canonical JSON: %v", ErrMalformed, err)
	}
	return out, nil
}

// CanonicalizeJSON rewrites a JSON document into its RFC 8785 form. Invalid
// JSON, duplicate object keys and numbers outside IEEE 754 double range are
// errors wrapping ErrMalformed.
func CanonicalizeJSON(raw []byte) ([]byte, error) {
	var p rawJCS
	out, err := p.canonical(make([]byte, 0, len(raw)), raw, 0)
	if err != nil {
		return jcsVerdict(raw)
	}
	return out, nil
}

// jcsVerdict runs gowebpki/jcs on a document rawJCS refused, for its
// error message (callers and clients see "Duplicate key: …" and the like).
// Had rawJCS refused something jcs accepts, jcs's answer would stand.
func jcsVerdict(raw []byte) ([]byte, error) {
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: canonical JSON: %v", ErrMalformed, err)
	}
	return out, nil
}

// SHA256Of returns the SHA-256 digest of v's canonical JSON.
func SHA256Of(v any) (Digest, error) {
	var d Digest
	err := withCanonical(v, func(b []byte) { d = SumSHA256(b) })
	return d, err
}

// identityLayers is the pinned shape hashed into a capability identity. The
// name, the kind and the discovery layer are left out on purpose: renaming,
// re-describing, tagging or aliasing never changes what a capability does.
type identityLayers struct {
	Alg  any `json:"alg"`
	Impl any `json:"impl"`
	Sem  any `json:"sem"`
}

// Identity is the pinned capability identity:
//
//	"sha256:" + hex(SHA-256(JCS({"alg": ALG, "impl": IMPL, "sem": SEM})))
//
// sem, alg and impl are the three behavioural layers, as values that
// encoding/json marshals to the layers' documented JSON.
func Identity(sem, alg, impl any) (Digest, error) {
	return SHA256Of(identityLayers{Alg: alg, Impl: impl, Sem: sem})
}

// RegistryHash is the pinned registry hash: every identity string, sorted,
// each followed by "\n", hashed with SHA-256. `sort ids.txt | sha256sum`
// reproduces it (byte order, as with LC_ALL=C; identities are ASCII).
func RegistryHash(ids []Digest) Digest {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	sort.Strings(s)
	return SumSHA256(lines(s))
}

// LayerList hashes an ordered list of digests, one per line, without
// sorting: the construction behind the execution hash and list layers.
func LayerList(ds []Digest) Digest {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.String()
	}
	return SumSHA256(lines(s))
}

func lines(s []string) []byte {
	var b bytes.Buffer
	for _, x := range s {
		b.WriteString(x)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
