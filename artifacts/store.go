// Package artifacts is groundgate's content-addressed blob store: the
// source data bytes of every execution and the outputs of every morphism,
// kept in the shared bbolt file and keyed by their BLAKE3 digest.
//
// # Layout
//
// One bucket, "artifacts.blobs": key = the digest string "blake3:<64 hex>"
// (hashing.Digest.Key), value = the blob's bytes, unchanged.
//
// # Guarantees
//
//   - Writes are idempotent: putting bytes that are already stored writes
//     nothing. Putting the right bytes over a blob that has gone corrupt
//     repairs it.
//   - Reads are verified: Get re-hashes the stored bytes and refuses to
//     return bytes that no longer hash to their key (ErrCorrupt). A
//     corrupt blob is reported, never served.
//   - Verify re-hashes every blob and lists every problem.
//
// PutTx and GetTx do the same inside a caller's transaction, so that the
// executor can store a footprint and every blob it refers to atomically.
package artifacts

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
)

// Bucket is the bbolt bucket holding the blobs.
var Bucket = []byte("artifacts.blobs")

// Store is the blob store. It is safe for concurrent use (bbolt serialises
// the writes).
type Store struct {
	db  *bolt.DB
	log *slog.Logger
}

// Option configures a Store.
type Option func(*Store)

// WithLogger sets the logger (discarding by default).
func WithLogger(l *slog.Logger) Option { return func(s *Store) { s.log = l } }

// Open prepares the blob bucket in db, normally the registry's file
// (registry.Store.DB()). It does not take ownership of db.
func Open(db *bolt.DB, opts ...Option) (*Store, error) {
	if db == nil {
		return nil, fmt.Errorf("artifacts: Open needs a database")
	}
	s := &Store{db: db, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, o := range opts {
		o(s)
	}
	if !db.IsReadOnly() {
		if err := db.Update(func(tx *bolt.Tx) error {
			_, err := tx.CreateBucketIfNotExists(Bucket)
			return err
		}); err != nil {
			return nil, fmt.Errorf("artifacts: create bucket: %w", err)
		}
	}
	return s, nil
}

// Put stores data under its BLAKE3 digest and returns the digest. Storing
// bytes that are already there writes nothing.
func (s *Store) Put(ctx context.Context, data []byte) (hashing.Digest, error) {
	if err := ctx.Err(); err != nil {
		return hashing.Digest{}, err
	}
	d := hashing.SumBLAKE3(data)
	var have bool
	if err := s.db.View(func(tx *bolt.Tx) error {
		have = intact(tx, d)
		return nil
	}); err != nil {
		return hashing.Digest{}, fmt.Errorf("artifacts: put %s: %w", d, err)
	}
	if have {
		return d, nil
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		_, err := s.put(tx, d, data)
		return err
	}); err != nil {
		return hashing.Digest{}, fmt.Errorf("artifacts: put %s: %w", d, err)
	}
	return d, nil
}

// PutTx is Put inside the caller's writable transaction. data must not be
// modified until the transaction ends.
func (s *Store) PutTx(tx *bolt.Tx, data []byte) (hashing.Digest, error) {
	d := hashing.SumBLAKE3(data)
	if _, err := s.put(tx, d, data); err != nil {
		return hashing.Digest{}, fmt.Errorf("artifacts: put %s: %w", d, err)
	}
	return d, nil
}

// put writes data under d unless an intact copy is already there, and
// reports whether it wrote.
func (s *Store) put(tx *bolt.Tx, d hashing.Digest, data []byte) (bool, error) {
	b := tx.Bucket(Bucket)
	if b == nil {
		return false, fmt.Errorf("bucket %s is missing", Bucket)
	}
	if old := b.Get(d.Key()); old != nil {
		if bytes.Equal(old, data) {
			return false, nil
		}
		s.log.Warn("artifact repaired: stored bytes did not hash to their key", slog.String("digest", d.String()))
	}
	// bbolt keeps a reference to data until the transaction ends: callers
	// must not modify it before then (documented on PutTx).
	return true, b.Put(d.Key(), data)
}

func intact(tx *bolt.Tx, d hashing.Digest) bool {
	b := tx.Bucket(Bucket)
	if b == nil {
		return false
	}
	v := b.Get(d.Key())
	return v != nil && hashing.SumBLAKE3(v) == d
}

// Get returns the blob stored under d: ErrNotFound when there is none,
// ErrCorrupt (and no bytes) when the stored bytes no longer hash to d.
func (s *Store) Get(ctx context.Context, d hashing.Digest) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		out, err = s.GetTx(tx, d)
		return err
	})
	return out, err
}

// GetTx is Get inside the caller's transaction. The bytes are copied out of
// the memory map, so they stay valid after the transaction ends.
func (s *Store) GetTx(tx *bolt.Tx, d hashing.Digest) ([]byte, error) {
	if d.Algorithm() != hashing.BLAKE3 {
		return nil, fmt.Errorf("artifact %q: only blake3 digests are stored: %w", d, ErrNotFound)
	}
	b := tx.Bucket(Bucket)
	if b == nil {
		return nil, fmt.Errorf("artifact %s: %w", d, ErrNotFound)
	}
	v := b.Get(d.Key())
	if v == nil {
		return nil, fmt.Errorf("artifact %s: %w", d, ErrNotFound)
	}
	if got := hashing.SumBLAKE3(v); got != d {
		return nil, fmt.Errorf("artifact %s: stored bytes hash to %s: %w", d, got, ErrCorrupt)
	}
	return bytes.Clone(v), nil
}

// Has reports whether an intact blob is stored under d.
func (s *Store) Has(ctx context.Context, d hashing.Digest) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	var have bool
	err := s.db.View(func(tx *bolt.Tx) error {
		have = intact(tx, d)
		return nil
	})
	return have, err
}

// Verify re-hashes every stored blob. It returns how many blobs it checked
// and one line per problem (a key that is not a blake3 digest, bytes that
// hash to another digest); err wraps ErrCorrupt when there is at least one
// problem, and is the storage error when the check could not run.
func (s *Store) Verify(ctx context.Context) (n int, problems []string, err error) {
	problems = []string{}
	err = s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(Bucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			n++
			d, err := hashing.Parse(string(k))
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("key %q is not a digest: %v", clip(k), err))
			case d.Algorithm() != hashing.BLAKE3:
				problems = append(problems, fmt.Sprintf("key %s is not a blake3 digest", d))
			default:
				if got := hashing.SumBLAKE3(v); got != d {
					problems = append(problems, fmt.Sprintf("blob %s hashes to %s", d, got))
				}
			}
			return nil
		})
	})
	if err != nil {
		return n, problems, fmt.Errorf("artifacts: verify: %w", err)
	}
	if len(problems) > 0 {
		return n, problems, fmt.Errorf("artifacts: verify: %d problem(s) in %d blobs, first: %s: %w", len(problems), n, problems[0], ErrCorrupt)
	}
	return n, problems, nil
}

func clip(k []byte) string {
	if len(k) > 80 {
		return string(k[:80]) + "…"
	}
	return string(k)
}
