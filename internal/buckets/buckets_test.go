package buckets

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestEnsure checks that the buckets exist afterwards and that a second call
// on a file that has them all commits nothing (the transaction id stays).
func TestEnsure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	txid := func() int {
		var id int
		if err := db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
			t.Fatal(err)
		}
		return id
	}
	a, b := []byte("a"), []byte("b")
	if err := Ensure(db, a); err != nil {
		t.Fatal(err)
	}
	first := txid()
	if err := Ensure(db, a); err != nil {
		t.Fatal(err)
	}
	if got := txid(); got != first {
		t.Errorf("Ensure of an existing bucket committed: txid %d → %d", first, got)
	}
	if err := Ensure(db, a, b); err != nil {
		t.Fatal(err)
	}
	if got := txid(); got != first+1 {
		t.Errorf("Ensure of a missing bucket: txid %d → %d, want one commit", first, got)
	}
	if err := db.View(func(tx *bolt.Tx) error {
		for _, n := range [][]byte{a, b} {
			if tx.Bucket(n) == nil {
				t.Errorf("bucket %s missing", n)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// A read-only file without the bucket is left as it is, without error.
	ro, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := Ensure(ro, []byte("c")); err != nil {
		t.Errorf("Ensure on a read-only file: %v", err)
	}
}
