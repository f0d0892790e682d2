package policy

import (
	"context"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// OnChange sees each new set once it is in force, after a put and after a
// delete, and nothing once removed.
func TestStoreOnChange(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "p.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	s, err := OpenStore(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []*Set
	s.OnChange(func(set *Set) {
		if s.Current() != set {
			t.Error("OnChange ran before the set was in force")
		}
		seen = append(seen, set)
	})
	c := chkPolicy(t, "cap", "(declare-const x Int) (declare-const allow Bool) (assert (! (=> allow (< x 5)) :named x_small))", map[string]string{"x": "/params/x"}, "allow")
	if _, err := s.Put(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "cap"); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0].Version != 1 || seen[0].Len() != 1 || seen[1].Version != 2 || seen[1].Len() != 0 {
		t.Fatalf("OnChange saw %d sets: %+v", len(seen), seen)
	}
	s.OnChange(nil)
	if _, err := s.Put(ctx, c); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("OnChange(nil) left the function in place: %d calls", len(seen))
	}
}
