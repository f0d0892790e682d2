package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Keyspace is what a file holds under one top-level bucket, as a copy to
// another engine needs it (groundgate migrate, store/storecopy).
type Keyspace struct {
	// Name is the bucket's name: the keyspace's.
	Name string
	// Sequence is the bucket's NextSequence counter: the last number it
	// gave (fuzz run ids). Another engine must not give it again.
	Sequence uint64
	// Keys counts the bucket's keys that hold values.
	Keys int
	// Nested names the buckets nested in this one. No release writes any
	// (the store's shapes are flat) and no engine has a place for them, so
	// a copy refuses a file that has them rather than drop them.
	Nested []string
}

// Keyspaces lists the file's top-level buckets in name order, in one read
// transaction: the keyspaces a copy must carry and the sequences it must
// carry with them, which store.Tx does not show (NextSequence only takes
// the next).
func (s *Store) Keyspaces(ctx context.Context) ([]Keyspace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []Keyspace
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			ks := Keyspace{Name: string(name), Sequence: b.Sequence()}
			err := b.ForEach(func(k, v []byte) error {
				if v == nil {
					ks.Nested = append(ks.Nested, string(k))
				} else {
					ks.Keys++
				}
				return nil
			})
			out = append(out, ks)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: keyspaces: %w", engineErr(err))
	}
	return out, nil
}
