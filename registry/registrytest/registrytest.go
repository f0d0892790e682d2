// Package registrytest helps tests that need a real registry: a bbolt file
// seeded with the built-in catalog, as a new server would have it.
package registrytest

import (
	"context"
	"testing"

	"github.com/groundgate/groundgate/registry"
)

// Seeded opens (creating) the registry in the bbolt file at path, seeds it
// with the built-in catalog when it is new, and closes it at cleanup
// (closing it earlier is harmless). It fails the test on any error.
func Seeded(t testing.TB, path string, opt registry.Options) *registry.Store {
	t.Helper()
	ctx := context.Background()
	s, err := registry.Open(ctx, path, opt)
	if err != nil {
		t.Fatalf("open registry %s: %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	cat, err := registry.BuiltinCatalog()
	if err != nil {
		t.Fatalf("built-in catalog: %v", err)
	}
	if _, err := s.Seed(ctx, cat); err != nil {
		t.Fatalf("seed %s: %v", path, err)
	}
	return s
}
