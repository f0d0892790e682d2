package policy

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/store/boltstore"
)

// TestStoreVersions: puts and deletes make versions 1, 2, 3 that all stay
// readable after a reopen; a changed byte in a stored policy makes opening
// and Verify fail as corrupt.
func TestStoreVersions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return time.Unix(1700000000, 0) }
	ps, err := OpenStore(ctx, st, clock)
	if err != nil {
		t.Fatal(err)
	}
	a := chkPolicy(t, "a", "(declare-const x Int)\n(define-fun allow () Bool (< x 10))", map[string]string{"x": "/params/amount"}, "allow")
	b := chkPolicy(t, "b", "(declare-const y Int)\n(define-fun allow () Bool (< y 20))", map[string]string{"y": "/params/amount"}, "allow")
	for _, c := range []*Compiled{a, b, a} {
		if _, err := ps.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ps.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Delete(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	want := ps.Current()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, err = boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps, err = OpenStore(ctx, st, clock)
	if err != nil {
		t.Fatal(err)
	}
	if got := ps.Current(); got.Version != 3 || got.Digest != want.Digest || got.Len() != 1 {
		t.Errorf("after a reopen: version %d, %d policies, digest %s; want 3, 1, %s", got.Version, got.Len(), got.Digest, want.Digest)
	}
	h, err := ps.History(ctx)
	if err != nil || len(h) != 3 || h[0].Version != 3 || h[2].Change != (Change{Op: "put", Name: "a"}) {
		t.Errorf("History = %+v, %v", h, err)
	}
	if v2, err := ps.Version(ctx, 2); err != nil || v2.Len() != 2 {
		t.Errorf("Version 2: %v, %v", v2, err)
	}
	if _, err := ps.Version(ctx, 4); !errors.Is(err, ErrNotFound) {
		t.Errorf("Version 4: %v", err)
	}
	if n, problems, err := Verify(ctx, st); err != nil || n != 5 || len(problems) != 0 {
		t.Errorf("Verify = %d, %q, %v; want 2 policies and 3 versions", n, problems, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// One byte of b's stored bytes changed: b is in force, so opening
	// fails, and Verify names it.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte("policy.blobs"))
		v := append([]byte(nil), bk.Get(b.ID.Key())...)
		v[len(v)-2] ^= 1
		return bk.Put(b.ID.Key(), v)
	}); err != nil {
		t.Fatal(err)
	}
	st = boltstore.Wrap(db)
	defer db.Close()
	if _, err := OpenStore(ctx, st, clock); !errors.Is(err, ErrCorrupt) || errkind.Of(err) != errkind.Corrupt {
		t.Errorf("opening with a corrupt policy in force: %v", err)
	}
	if _, problems, err := Verify(ctx, st); !errors.Is(err, ErrCorrupt) || len(problems) != 3 {
		t.Errorf("Verify with a corrupt policy: %q, %v; want the policy and the two versions naming it", problems, err)
	}
}
