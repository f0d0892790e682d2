// Package hashing holds groundgate's digest value type, RFC 8785 canonical
// JSON, and the pinned hash functions every other package builds on.
//
// # Digests
//
// A Digest names its algorithm, following the OCI convention "ALGO:HEX":
// "sha256:…" for identities, requests, plans and execution hashes, and
// "blake3:…" (256-bit) for content such as data files and artifacts. A
// Digest is an immutable, comparable value: usable as a map key, a bbolt
// key, a JSON string and a URL segment.
//
// # Canonical JSON
//
// Everything that is hashed is a struct that holds only the hashed fields,
// written as RFC 8785 (JCS) canonical JSON: by definition the bytes of
// encoding/json's encoding passed through RFC 8785, produced by Canonical in
// one pass (encode.go). The pinned constructions are Identity, RegistryHash
// and ExecutionHash.
package hashing

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/zeebo/blake3"
)

// Algorithm names the hash function behind a Digest.
type Algorithm uint8

// The algorithms groundgate uses. The zero Algorithm is invalid, so a zero
// Digest never passes for a real one.
const (
	SHA256 Algorithm = iota + 1
	BLAKE3
)

// String returns the algorithm's prefix as written in a digest string.
func (a Algorithm) String() string {
	switch a {
	case SHA256:
		return "sha256"
	case BLAKE3:
		return "blake3"
	default:
		return fmt.Sprintf("algorithm(%d)", uint8(a))
	}
}

// Size is the length in bytes of every digest groundgate produces.
const Size = 32

// Digest is an algorithm-tagged 256-bit hash value.
type Digest struct {
	algo Algorithm
	sum  [Size]byte
}

// New wraps raw hash bytes. It panics if sum is not Size bytes, which is a
// programming error, not an input error.
func New(a Algorithm, sum []byte) Digest {
	if len(sum) != Size {
		panic(fmt.Sprintf("hashing: digest of %d bytes, want %d", len(sum), Size))
	}
	d := Digest{algo: a}
	copy(d.sum[:], sum)
	return d
}

// SumSHA256 returns the SHA-256 digest of b.
func SumSHA256(b []byte) Digest {
	return Digest{algo: SHA256, sum: sha256.Sum256(b)}
}

// SumBLAKE3 returns the 256-bit BLAKE3 digest of b.
func SumBLAKE3(b []byte) Digest {
	return Digest{algo: BLAKE3, sum: blake3.Sum256(b)}
}

// Parse reads a digest written as "sha256:<64 hex>" or "blake3:<64 hex>".
// Hex must be lower case: one object, one spelling.
func Parse(s string) (Digest, error) {
	prefix, hexpart, ok := strings.Cut(s, ":")
	if !ok {
		return Digest{}, fmt.Errorf("%w: %q has no algorithm prefix", ErrMalformed, clip(s))
	}
	var a Algorithm
	switch prefix {
	case "sha256":
		a = SHA256
	case "blake3":
		a = BLAKE3
	default:
		return Digest{}, fmt.Errorf("%w: unknown algorithm %q", ErrMalformed, clip(prefix))
	}
	if len(hexpart) != 2*Size {
		return Digest{}, fmt.Errorf("%w: %s digest has %d hex digits, want %d", ErrMalformed, prefix, len(hexpart), 2*Size)
	}
	for i := 0; i < len(hexpart); i++ {
		c := hexpart[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return Digest{}, fmt.Errorf("%w: digest must be lower-case hex", ErrMalformed)
		}
	}
	d := Digest{algo: a}
	if _, err := hex.Decode(d.sum[:], []byte(hexpart)); err != nil {
		return Digest{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return d, nil
}

// MustParse is Parse for constants in tests and tables; it panics on error.
func MustParse(s string) Digest {
	d, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return d
}

// Algorithm reports which hash function produced d.
func (d Digest) Algorithm() Algorithm { return d.algo }

// IsZero reports whether d is the zero Digest (no value).
func (d Digest) IsZero() bool { return d.algo == 0 }

// Sum returns a copy of the raw hash bytes.
func (d Digest) Sum() []byte { s := d.sum; return s[:] }

// String returns "algo:hex", or "" for the zero Digest.
func (d Digest) String() string {
	if d.IsZero() {
		return ""
	}
	var buf [textLen]byte
	return string(d.appendText(buf[:0]))
}

// textLen is the length of a digest's text for both algorithms.
const textLen = len("sha256:") + 2*Size

// appendText appends "algo:hex" to b (every caller but String and its
// kin has checked that d is not zero). One allocation per digest written:
// the server writes several per request.
func (d Digest) appendText(b []byte) []byte {
	b = append(b, d.algo.String()...)
	b = append(b, ':')
	return hex.AppendEncode(b, d.sum[:])
}

// Key returns the bytes used to key d in a store: its string form, which
// keeps bbolt dumps readable and sorts like the pinned registry hash.
func (d Digest) Key() []byte {
	if d.IsZero() {
		return []byte{}
	}
	return d.appendText(make([]byte, 0, textLen))
}

// MarshalText implements encoding.TextMarshaler. The zero Digest cannot be
// marshalled: writing an empty digest is always a bug upstream.
func (d Digest) MarshalText() ([]byte, error) { return d.AppendText(make([]byte, 0, textLen)) }

// AppendText implements encoding.TextAppender: MarshalText's text,
// appended to b.
func (d Digest) AppendText(b []byte) ([]byte, error) {
	if d.IsZero() {
		return b, fmt.Errorf("%w: zero digest", ErrMalformed)
	}
	return d.appendText(b), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Digest) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// clip shortens attacker-controlled text before it goes into an error.
func clip(s string) string {
	const max = 80
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
