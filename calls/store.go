package calls

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/buckets"
	"github.com/groundgate/groundgate/internal/groupcommit"
)

// BucketCalls holds call footprints: call hash → the footprint's RFC 8785
// form.
var BucketCalls = []byte("calls.records")

// store keeps footprints durably; records made at once share a commit.
type store struct {
	db *bolt.DB
	w  *groupcommit.Writer
}

func openStore(db *bolt.DB) (*store, error) {
	if err := buckets.Ensure(db, BucketCalls); err != nil {
		return nil, err
	}
	return &store{db: db, w: groupcommit.New(db, BucketCalls)}, nil
}

// put stores a sealed footprint and returns once it is durable. Two
// identical calls (same layers) are one record.
func (s *store) put(f *Footprint) error {
	raw, err := f.seal()
	if err != nil {
		return err
	}
	if err := s.w.Put(f.Hash.Key(), raw); err != nil {
		return fmt.Errorf("calls: store footprint: %w", err)
	}
	return nil
}

// PutTx stores a sealed footprint's bytes (Session.Keep's raw) in tx: the
// record a session writes in its own transaction. Two identical calls
// (same layers) are one record.
func PutTx(tx *bolt.Tx, f *Footprint, raw []byte) error {
	b := tx.Bucket(BucketCalls)
	if b == nil {
		return fmt.Errorf("calls: no bucket %s", BucketCalls)
	}
	if err := b.Put(f.Hash.Key(), raw); err != nil {
		return fmt.Errorf("calls: store footprint: %w", err)
	}
	return nil
}

// get reads a footprint and checks it (Footprint.Check) and that its
// bytes are its canonical form.
func (s *store) get(ctx context.Context, hash hashing.Digest) (*Footprint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var raw []byte
	if err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(BucketCalls); b != nil {
			raw = bytes.Clone(b.Get(hash.Key()))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("calls: read %s: %w", hash, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, hash)
	}
	f, err := decodeRecord(hash, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, hash, err)
	}
	return f, nil
}

// decodeRecord reads a stored footprint and checks it.
func decodeRecord(key hashing.Digest, raw []byte) (*Footprint, error) {
	var f Footprint
	if err := hashing.DecodeStrict(raw, &f); err != nil {
		return nil, err
	}
	if f.Hash != key {
		return nil, fmt.Errorf("stored under %s, says %s", key, f.Hash)
	}
	if err := f.Check(); err != nil {
		return nil, err
	}
	canon, err := hashing.Canonical(&f)
	if err != nil || !bytes.Equal(canon, raw) {
		return nil, fmt.Errorf("does not re-encode to its bytes")
	}
	return &f, nil
}

// VerifyDB re-checks every stored call footprint (registry verify): it
// returns how many there are and a problem per record that fails.
func VerifyDB(ctx context.Context, db *bolt.DB) (n int, problems []string, err error) {
	problems = []string{}
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(BucketCalls)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			n++
			key, err := hashing.Parse(string(k))
			if err != nil {
				problems = append(problems, fmt.Sprintf("key %q is not a digest", clip(string(k), 80)))
				return nil
			}
			if _, err := decodeRecord(key, v); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", key, err))
			}
			return nil
		})
	})
	if err != nil {
		return n, problems, fmt.Errorf("verify calls: %w", err)
	}
	if len(problems) > 0 {
		return n, problems, fmt.Errorf("%w: %d call record(s)", ErrCorrupt, len(problems))
	}
	return n, problems, nil
}

// clip shortens text quoted in an error.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
