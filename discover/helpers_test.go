package discover

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/registry/registrytest"
)

// catalog returns the built-in catalog the tests seed with.
func catalog(t testing.TB) []registry.Entry {
	t.Helper()
	es, err := registry.BuiltinCatalog()
	if err != nil {
		t.Fatalf("built-in catalog: %v", err)
	}
	return es
}

// mustOpenStore opens a registry in a temporary bbolt file, seeded with
// the built-in catalog. At cleanup it checks that every stored evidence
// record still hashes to its key.
func mustOpenStore(t testing.TB) (*registry.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gg.db")
	s := registrytest.Seeded(t, path, registry.Options{})
	t.Cleanup(func() {
		checkEvidence(t, s)
		s.Close()
	})
	return s, path
}

// checkEvidence re-hashes every evidence record in the store's file. Tests
// that corrupt a record on purpose put it back first.
func checkEvidence(t testing.TB, s *registry.Store) {
	t.Helper()
	err := s.DB().View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(spaceEvidence.Name))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if got := hashing.SumSHA256(v).String(); got != string(k) {
				t.Errorf("evidence %s hashes to %s", k, got)
			}
			return nil
		})
	})
	if err != nil && !errors.Is(err, bolt.ErrDatabaseNotOpen) {
		t.Errorf("check evidence: %v", err)
	}
}

// mustNew builds a Discoverer over s and closes it at cleanup.
func mustNew(t testing.TB, s *registry.Store) *Discoverer {
	t.Helper()
	d, err := New(context.Background(), s, s.Engine(), Options{})
	if err != nil {
		t.Fatalf("discover.New: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func mustDiscover(t testing.TB, d *Discoverer, q Query) Result {
	t.Helper()
	r, err := d.Discover(context.Background(), q)
	if err != nil {
		t.Fatalf("Discover(%+v): %v", q, err)
	}
	return r
}
