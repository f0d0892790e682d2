package artifacts

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/boltstore"
)

// mustOpen opens a store in a fresh bbolt file and, at cleanup, verifies
// every blob still hashes to its key (unless the test corrupted it on
// purpose and said so).
func mustOpen(t testing.TB) (*Store, *bolt.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(boltstore.Wrap(db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return s, db, path
}

// corrupt writes data under d as it is, as a bug or a previous release
// would have (the bucket made if no blob was stored yet).
func corrupt(t *testing.T, db *bolt.DB, d hashing.Digest, data []byte) {
	t.Helper()
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(Bucket)
		if err != nil {
			return err
		}
		return b.Put(d.Key(), data)
	}); err != nil {
		t.Fatal(err)
	}
}

func TestPutGet(t *testing.T) {
	ctx := context.Background()
	s, db, _ := mustOpen(t)
	cases := [][]byte{
		{},
		[]byte("Date,Price\n2020-04-20,-36.98\n"),
		bytes.Repeat([]byte{0, 1, 2, 0xff}, 100000),
	}
	for i, data := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			d, err := s.Put(ctx, data)
			if err != nil {
				t.Fatal(err)
			}
			if want := hashing.SumBLAKE3(data); d != want || !strings.HasPrefix(d.String(), "blake3:") {
				t.Fatalf("Put = %s, want %s", d, want)
			}
			got, err := s.Get(ctx, d)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("Get = %d bytes, %v", len(got), err)
			}
			// Idempotent: a second Put writes nothing (the file's tx id
			// does not move).
			before := txid(t, db)
			if d2, err := s.Put(ctx, data); err != nil || d2 != d {
				t.Fatalf("second Put = %s, %v", d2, err)
			}
			if after := txid(t, db); after != before {
				t.Fatalf("second Put wrote a transaction (%d → %d)", before, after)
			}
			if ok, err := s.Has(ctx, d); !ok || err != nil {
				t.Fatalf("Has = %v, %v", ok, err)
			}
		})
	}
	n, problems, err := s.Verify(ctx)
	if err != nil || len(problems) != 0 || n != len(cases) {
		t.Fatalf("Verify = %d, %v, %v", n, problems, err)
	}
}

func txid(t *testing.T, db *bolt.DB) int {
	t.Helper()
	var id int
	_ = db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
	return id
}

func TestGetMissing(t *testing.T) {
	ctx := context.Background()
	s, _, _ := mustOpen(t)
	for _, d := range []hashing.Digest{
		hashing.SumBLAKE3([]byte("never stored")),
		hashing.SumSHA256([]byte("wrong algorithm")),
		{},
	} {
		if _, err := s.Get(ctx, d); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", d, err)
		}
	}
}

// A blob whose bytes were changed behind the store's back is reported by
// Get and Verify and never served; putting the right bytes repairs it.
func TestCorruptNeverServed(t *testing.T) {
	ctx := context.Background()
	s, db, _ := mustOpen(t)
	good := []byte("Date,Price\n2020-04-17,18.27\n2020-04-20,-36.98\n")
	d, err := s.Put(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := s.Put(ctx, []byte("another blob"))
	bad := bytes.Clone(good)
	bad[len(bad)-3] = '7'
	corrupt(t, db, d, bad)
	if got, err := s.Get(ctx, d); !errors.Is(err, ErrCorrupt) || got != nil {
		t.Fatalf("Get(corrupt) = %q, %v; want no bytes and ErrCorrupt", got, err)
	}
	if ok, _ := s.Has(ctx, d); ok {
		t.Fatal("Has(corrupt) = true")
	}
	n, problems, err := s.Verify(ctx)
	if !errors.Is(err, ErrCorrupt) || n != 2 || len(problems) != 1 || !strings.Contains(problems[0], d.String()) {
		t.Fatalf("Verify = %d, %q, %v", n, problems, err)
	}
	// A key that is not a digest is reported too.
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(Bucket).Put([]byte("junk"), []byte("x")) }); err != nil {
		t.Fatal(err)
	}
	if _, problems, _ := s.Verify(ctx); len(problems) != 2 {
		t.Fatalf("Verify with a junk key: %q", problems)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(Bucket).Delete([]byte("junk")) }); err != nil {
		t.Fatal(err)
	}
	// The intact neighbour is still served.
	if _, err := s.Get(ctx, other); err != nil {
		t.Fatal(err)
	}
	// Putting the right bytes again repairs the blob.
	if _, err := s.Put(ctx, good); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, d); err != nil || !bytes.Equal(got, good) {
		t.Fatalf("after repair: %q, %v", got, err)
	}
	if _, problems, err := s.Verify(ctx); err != nil || len(problems) != 0 {
		t.Fatalf("Verify after repair: %q, %v", problems, err)
	}
}

// Blobs survive closing and reopening the file, and PutTx/GetTx work inside
// a caller's transaction, all or nothing.
func TestReopenAndTx(t *testing.T) {
	ctx := context.Background()
	s, db, path := mustOpen(t)
	data := make([]byte, 1<<16)
	rand.Read(data)
	var d hashing.Digest
	st := boltstore.Wrap(db)
	err := st.Update(ctx, func(tx store.Tx) error {
		var err error
		if d, err = s.PutTx(tx, data); err != nil {
			return err
		}
		got, err := s.GetTx(tx, d)
		if err != nil || !bytes.Equal(got, data) {
			return fmt.Errorf("GetTx in the same tx: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A rolled-back transaction leaves nothing behind.
	rolled := []byte("rolled back")
	boom := errors.New("boom")
	if err := st.Update(ctx, func(tx store.Tx) error {
		if _, err := s.PutTx(tx, rolled); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, hashing.SumBLAKE3(rolled)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rolled-back blob: %v", err)
	}
	db.Close()
	db2, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	s2, err := Open(boltstore.Wrap(db2))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s2.Get(ctx, d); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after reopen: %v", err)
	}
}
