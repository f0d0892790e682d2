package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/pgstore"
	"github.com/groundgate/groundgate/store/pgstore/pgstoretest"
	"github.com/groundgate/groundgate/store/s3store"
	"github.com/groundgate/groundgate/store/storetest"
)

// One PostgreSQL cluster and one SeaweedFS per test binary; a database
// and a bucket per test.
func TestMain(m *testing.M) { pgstoretest.Main(m) }

// place is one test's database and bucket (pgstoretest.Place).
type place struct{ pgstoretest.Place }

func newPlace(t testing.TB) place { return place{pgstoretest.New(t)} }

func (p place) blobs(t testing.TB) *s3store.Blobs { return p.Blobs(t) }

func (p place) open(t testing.TB) *pgstore.Store { return p.Open(t) }

func (p place) exec(t *testing.T, sql string, args ...any) pgconn.CommandTag {
	return p.Exec(t, sql, args...)
}

func (p place) corrupt(t *testing.T, name string, key []byte) { p.Corrupt(t, name, key) }

// TestStore runs the store suite on PostgreSQL and SeaweedFS's S3.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		p := newPlace(t)
		return storetest.Harness{
			Open: func(t *testing.T) store.Store { return p.open(t) },
			Close: func(t *testing.T, s store.Store) {
				if err := s.(*pgstore.Store).Close(); err != nil {
					t.Error(err)
				}
			},
			Corrupt: p.corrupt,
		}
	})
}

// TestClosed: a closed store answers ErrClosed.
func TestClosed(t *testing.T) {
	s := newPlace(t).open(t)
	s.Close()
	if err := s.View(context.Background(), func(store.Tx) error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Errorf("View after Close: %v", err)
	}
}

// TestMigrateIdempotent: opening the same database again (a restart, a
// second replica) keeps the schema and the data; a schema newer than the
// build is refused.
func TestMigrateIdempotent(t *testing.T) {
	ctx := context.Background()
	p := newPlace(t)
	a := p.open(t)
	defer a.Close()
	if err := a.Update(ctx, func(tx store.Tx) error { return tx.PutValue("v", []byte("k"), []byte("kept")) }); err != nil {
		t.Fatal(err)
	}
	b := p.open(t)
	defer b.Close()
	if err := b.View(ctx, func(tx store.Tx) error {
		raw, err := tx.Value("v", []byte("k"))
		if string(raw) != "kept" {
			t.Errorf("after a second Open: %q, %v", raw, err)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	p.exec(t, `UPDATE store_schema SET version = version + 1`)
	if _, err := pgstore.Open(ctx, pgstore.Config{DSN: p.DSN, Blobs: p.blobs(t)}); !errors.Is(err, pgstore.ErrSchema) {
		t.Errorf("Open of a newer schema: %v, want ErrSchema", err)
	}
}

// TestVerifyBlobs: store.Verify over a blob space scans the object store
// (the space has no rows in store_kv) and reports the one corrupt blob.
func TestVerifyBlobs(t *testing.T) {
	ctx := context.Background()
	p := newPlace(t)
	s := p.open(t)
	defer s.Close()
	sp := store.Space{Name: "verify.blobs"}
	var keys []hashing.Digest
	if err := s.Update(ctx, func(tx store.Tx) error {
		for _, v := range []string{"one", "two", "three"} {
			k := hashing.SumBLAKE3([]byte(v))
			keys = append(keys, k)
			if err := tx.PutBlob(sp, k, []byte(v)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p.corrupt(t, sp.Name, keys[1].Key())
	var n int
	var problems []string
	err := s.View(ctx, func(tx store.Tx) error {
		var err error
		n, problems, err = store.Verify(ctx, tx, sp, nil)
		return err
	})
	if n != 3 || len(problems) != 1 || !strings.HasPrefix(problems[0], keys[1].String()) || !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Verify = %d, %q, %v; want 3 blobs, the second corrupt", n, problems, err)
	}
	if err := s.View(ctx, func(tx store.Tx) error {
		return tx.Scan("verify.never", func(k, _ []byte) error { return fmt.Errorf("a key %q in an unused space", k) })
	}); err != nil {
		t.Error(err)
	}
}
