// Package buckets makes sure a bbolt file has the buckets a store needs.
package buckets

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Ensure creates the named top-level buckets that db does not have yet. It
// looks in a read transaction first: a writing transaction is a commit with
// two fsyncs even when it changes nothing, and every store of a one-shot
// command opening an existing file would otherwise pay one. A read-only db
// is left alone (its readers see empty stores until a writer has made them).
func Ensure(db *bolt.DB, names ...[]byte) error {
	if db.IsReadOnly() {
		return nil
	}
	missing := false
	if err := db.View(func(tx *bolt.Tx) error {
		for _, n := range names {
			if tx.Bucket(n) == nil {
				missing = true
				return nil
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("buckets: %w", err)
	}
	if !missing {
		return nil
	}
	return db.Update(func(tx *bolt.Tx) error {
		for _, n := range names {
			if _, err := tx.CreateBucketIfNotExists(n); err != nil {
				return fmt.Errorf("buckets: create %q: %w", n, err)
			}
		}
		return nil
	})
}
