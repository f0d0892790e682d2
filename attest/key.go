package attest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxKeyFileBytes bounds how much of a key file is read: a PEM Ed25519 key
// is about 120 bytes.
const maxKeyFileBytes = 64 << 10

// PEM block types of the key files.
const (
	pemPrivate = "PRIVATE KEY" // PKCS#8
	pemPublic  = "PUBLIC KEY"  // SubjectPublicKeyInfo
)

// PublicKey is an Ed25519 verification key with its id.
type PublicKey struct {
	// ID is "sha256:" + hex SHA-256 of the key's DER SubjectPublicKeyInfo:
	// `openssl pkey -pubin -in key.pem -outform DER | sha256sum` computes
	// it from the PEM that PEM returns.
	ID  string
	Key ed25519.PublicKey
}

// NewPublicKey wraps an Ed25519 public key and computes its id.
func NewPublicKey(k ed25519.PublicKey) (PublicKey, error) {
	if len(k) != ed25519.PublicKeySize {
		return PublicKey{}, fmt.Errorf("%w: a public key of %d bytes, want %d", ErrKeyType, len(k), ed25519.PublicKeySize)
	}
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		return PublicKey{}, fmt.Errorf("attest: encode public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return PublicKey{ID: "sha256:" + hex.EncodeToString(sum[:]), Key: bytes.Clone(k)}, nil
}

// PEM is the key as a PEM "PUBLIC KEY" block (DER SubjectPublicKeyInfo),
// what `openssl pkey -pubout` writes.
func (k PublicKey) PEM() []byte {
	der, err := x509.MarshalPKIXPublicKey(k.Key)
	if err != nil {
		// NewPublicKey and ParsePublicKeyPEM only make keys it encodes.
		panic(fmt.Sprintf("attest: encode public key: %v", err))
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPublic, Bytes: der})
}

// Base64 is the raw 32-byte public key in standard base64.
func (k PublicKey) Base64() string { return base64.StdEncoding.EncodeToString(k.Key) }

// ParsePublicKeyPEM reads a verification key: one PEM block, either a
// "PUBLIC KEY" (SubjectPublicKeyInfo) or a PKCS#8 "PRIVATE KEY" whose
// public half is taken, holding an Ed25519 key.
func ParsePublicKeyPEM(b []byte) (PublicKey, error) {
	block, err := onePEM(b)
	if err != nil {
		return PublicKey{}, err
	}
	switch block.Type {
	case pemPublic:
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return PublicKey{}, fmt.Errorf("%w: %v", ErrKeyType, err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return PublicKey{}, fmt.Errorf("%w: the PEM holds a %T", ErrKeyType, k)
		}
		return NewPublicKey(pub)
	case pemPrivate:
		priv, err := parsePrivate(block)
		if err != nil {
			return PublicKey{}, err
		}
		return NewPublicKey(priv.Public().(ed25519.PublicKey))
	}
	return PublicKey{}, fmt.Errorf("%w: a PEM %q block, want %q or %q", ErrKeyType, block.Type, pemPublic, pemPrivate)
}

// LoadPublicKey reads a verification key file (see ParsePublicKeyPEM). A
// private key file must pass the same permission check as for signing.
func LoadPublicKey(path string) (PublicKey, error) {
	b, err := readKeyFile(path, false)
	if err != nil {
		return PublicKey{}, err
	}
	if block, _ := pem.Decode(b); block != nil && block.Type == pemPrivate {
		if _, err := readKeyFile(path, true); err != nil {
			return PublicKey{}, err
		}
	}
	k, err := ParsePublicKeyPEM(b)
	if err != nil {
		return PublicKey{}, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

// DefaultKeyPath is where a server on database file db keeps its key when
// none is configured: next to it, with ".key" for its extension
// (groundgate.db → groundgate.key).
func DefaultKeyPath(db string) string {
	p := strings.TrimSuffix(db, filepath.Ext(db)) + ".key"
	if p == db {
		p += ".key" // never the database itself
	}
	return p
}

// Signer holds an Ed25519 signing key.
type Signer struct {
	priv ed25519.PrivateKey
	pub  PublicKey
}

// NewSigner wraps an Ed25519 private key.
func NewSigner(priv ed25519.PrivateKey) (*Signer, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: a private key of %d bytes, want %d", ErrKeyType, len(priv), ed25519.PrivateKeySize)
	}
	pub, err := NewPublicKey(priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	return &Signer{priv: bytes.Clone(priv), pub: pub}, nil
}

// PublicKey is the signer's verification key.
func (s *Signer) PublicKey() PublicKey { return s.pub }

// LoadOrCreate returns the signer whose key is in the file at path,
// creating the file with a new key (mode 0600) when there is none. It
// refuses a key file that group or others may read or write
// (ErrKeyPermissions) and one that is not an Ed25519 PKCS#8 PEM key
// (ErrKeyType). Creation is atomic: the key is written to a temporary file
// in the same directory and linked into place only if path still does not
// exist, so a reader never sees half a key and two processes starting at
// once end up with the same one.
func LoadOrCreate(path string) (*Signer, error) {
	s, err := LoadSigner(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	if err := createKey(path, rand.Reader); err != nil {
		return nil, err
	}
	return LoadSigner(path)
}

// LoadSigner returns the signer whose key is in the file at path, with the
// checks of LoadOrCreate; a missing file is an error wrapping
// fs.ErrNotExist.
func LoadSigner(path string) (*Signer, error) {
	b, err := readKeyFile(path, true)
	if err != nil {
		return nil, err
	}
	block, err := onePEM(b)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if block.Type != pemPrivate {
		return nil, fmt.Errorf("key file %s: %w: a PEM %q block, want %q", path, ErrKeyType, block.Type, pemPrivate)
	}
	priv, err := parsePrivate(block)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return NewSigner(priv)
}

// readKeyFile reads a key file of bounded size; private says it must be a
// regular file that only its owner can read or write.
func readKeyFile(path string, private bool) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if private {
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("key file %s: %w: not a regular file", path, ErrKeyPermissions)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			return nil, fmt.Errorf("key file %s: %w: mode %04o lets group or others at the private key; `chmod 600 %s` if it has not leaked, else replace it",
				path, ErrKeyPermissions, perm, path)
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if len(b) > maxKeyFileBytes {
		return nil, fmt.Errorf("key file %s: %w: over %d bytes", path, ErrKeyType, maxKeyFileBytes)
	}
	return b, nil
}

// onePEM decodes exactly one PEM block without headers; anything but
// whitespace around it is refused, so a file has one meaning.
func onePEM(b []byte) (*pem.Block, error) {
	block, rest := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block", ErrKeyType)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("%w: data after the PEM block", ErrKeyType)
	}
	if len(block.Headers) != 0 {
		return nil, fmt.Errorf("%w: PEM headers (an encrypted key?)", ErrKeyType)
	}
	return block, nil
}

func parsePrivate(block *pem.Block) (ed25519.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeyType, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: the PKCS#8 key is a %T", ErrKeyType, k)
	}
	return priv, nil
}

// createKey writes a new key to path unless a file is there by then (that
// one wins and is used).
func createKey(path string, random io.Reader) error {
	_, priv, err := ed25519.GenerateKey(random)
	if err != nil {
		return fmt.Errorf("attest: generate key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return fmt.Errorf("attest: encode key: %w", err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".new-*") // mode 0600
	if err != nil {
		return fmt.Errorf("attest: create key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("attest: create key file: %w", err)
	}
	if err := pem.Encode(tmp, &pem.Block{Type: pemPrivate, Bytes: der}); err != nil {
		tmp.Close()
		return fmt.Errorf("attest: write key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("attest: write key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("attest: write key file: %w", err)
	}
	// Link, unlike rename, never replaces a key another process put there
	// meanwhile: signatures made with it would stop verifying.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("attest: create key file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the new name durable; not every file system supports it
		d.Close()
	}
	return nil
}

// dsseSigner and dsseVerifier adapt the keys to the DSSE library.
type dsseSigner struct{ s *Signer }

func (d dsseSigner) Sign(_ context.Context, data []byte) ([]byte, error) {
	return ed25519.Sign(d.s.priv, data), nil
}

func (d dsseSigner) KeyID() (string, error) { return d.s.pub.ID, nil }

type dsseVerifier struct{ k PublicKey }

func (d dsseVerifier) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(d.k.Key, data, sig) {
		return ErrBadSignature
	}
	return nil
}

func (d dsseVerifier) KeyID() (string, error)   { return d.k.ID, nil }
func (d dsseVerifier) Public() crypto.PublicKey { return d.k.Key }
