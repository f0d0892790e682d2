package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/boltstore"
	"github.com/groundgate/groundgate/store/storetest"
)

// TestStore runs the store suite on a bbolt file in a temp dir.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		path := filepath.Join(t.TempDir(), "store.db")
		return storetest.Harness{
			Open: func(t *testing.T) store.Store {
				s, err := boltstore.Open(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			Close: func(t *testing.T, s store.Store) {
				if err := s.(*boltstore.Store).Close(); err != nil {
					t.Error(err)
				}
			},
			Corrupt: func(t *testing.T, name string, key []byte) { flip(t, path, name, key) },
		}
	})
}

// flip changes the last byte of the value under key in bucket name.
func flip(t *testing.T, path, name string, key []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(name))
		v := append([]byte(nil), b.Get(key)...)
		if len(v) == 0 {
			t.Fatalf("no value under %s %s", name, key)
		}
		v[len(v)-1] ^= 0x20
		return b.Put(key, v)
	}); err != nil {
		t.Fatal(err)
	}
}

// TestExistingLayout reads a file written the way releases before the
// store wrote it (bbolt directly): a policy version under its 8-byte key,
// a session's call under id ‖ 0 ‖ seq, a record under its digest's text.
func TestExistingLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := []byte(`{"r":1}`)
	id := hashing.SumSHA256(rec)
	if err := db.Update(func(tx *bolt.Tx) error {
		v, _ := tx.CreateBucket([]byte("policy.versions"))
		r, _ := tx.CreateBucket([]byte("policy.blobs"))
		c, _ := tx.CreateBucket([]byte("session.calls"))
		k := append(id.Key(), 0, 0, 0, 0, 0, 0, 0, 0, 1)
		return errors.Join(v.Put([]byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte("v1")), r.Put(id.Key(), rec), c.Put(k, []byte("call 1")))
	}); err != nil {
		t.Fatal(err)
	}
	s := boltstore.Wrap(db)
	defer db.Close()
	if err := s.View(context.Background(), func(tx store.Tx) error {
		n, raw, err := tx.LatestVersion("policy.versions")
		if n != 1 || string(raw) != "v1" || err != nil {
			t.Errorf("LatestVersion = %d %q %v", n, raw, err)
		}
		if raw, err := tx.Record(store.Space{Name: "policy.blobs"}, id); err != nil || string(raw) != string(rec) {
			t.Errorf("Record = %q %v", raw, err)
		}
		if raw, err := tx.Entry("session.calls", id.Key(), 1); err != nil || string(raw) != "call 1" {
			t.Errorf("Entry = %q %v", raw, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
