package hashing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/gowebpki/jcs"
)

// Canonical encodes v with encoding/json and canonicalises the result with
// RFC 8785. Callers pass a struct holding exactly the fields to be hashed.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical: marshal: %w", err)
	}
	return CanonicalizeJSON(raw)
}

// CanonicalizeJSON rewrites a JSON document into its RFC 8785 form. Invalid
// JSON, duplicate object keys and numbers outside IEEE 754 double range are
// errors wrapping ErrMalformed.
func CanonicalizeJSON(raw []byte) ([]byte, error) {
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: canonical JSON: %v", ErrMalformed, err)
	}
	return out, nil
}

// SHA256Of returns the SHA-256 digest of v's canonical JSON.
func SHA256Of(v any) (Digest, error) {
	b, err := Canonical(v)
	if err != nil {
		return Digest{}, err
	}
	return SumSHA256(b), nil
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

// DecodeStrict decodes one JSON document into v, refusing what a lenient
// decoder would paper over: duplicate object keys, unknown fields, trailing
// data and numbers outside float64 range. One object has one spelling.
func DecodeStrict(data []byte, v any) error {
	if _, err := CanonicalizeJSON(data); err != nil {
		return err
	}
	return DecodePart(data, v)
}

// DecodePart decodes a part of a document that DecodeStrict has already
// checked as a whole (a json.RawMessage field of it), refusing unknown
// fields. Duplicate keys, number range and trailing data were settled by
// that check, so the canonicalisation pass is not repeated per part.
func DecodePart(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}
