package discover

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/groundgate/groundgate/registry"
)

// catalog returns the built-in catalog the tests seed with.
func catalog(t testing.TB) []registry.Entry {
	t.Helper()
	if dir := os.Getenv("GG_DEV_CATALOG"); dir != "" { // TEMPORARY
		es, err := registry.LoadCatalog(os.DirFS(dir), ".")
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	es, err := registry.BuiltinCatalog()
	if err != nil {
		t.Fatalf("built-in catalog: %v", err)
	}
	return es
}

// mustOpenStore opens a registry in a temporary bbolt file, seeded with
// the built-in catalog.
func mustOpenStore(t testing.TB) (*registry.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gg.db")
	s, err := registry.Open(context.Background(), path, registry.Options{})
	if err != nil {
		t.Fatalf("open registry: %v", err)
	}
	if _, err := s.Seed(context.Background(), catalog(t)); err != nil {
		s.Close()
		t.Fatalf("seed: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// mustNew builds a Discoverer over s and closes it at cleanup.
func mustNew(t testing.TB, s *registry.Store) *Discoverer {
	t.Helper()
	d, err := New(context.Background(), s, s.DB(), Options{})
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
