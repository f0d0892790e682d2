package registry

import (
	"context"
	"testing"
)

// BenchmarkOpen is the cost of opening a seeded registry: every record of
// the current version is read, re-hashed and decoded.
func BenchmarkOpen(b *testing.B) {
	cat, err := BuiltinCatalog()
	if err != nil {
		b.Fatal(err)
	}
	s, path := mustOpenStore(b)
	mustSeed(b, s, cat)
	s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := Open(context.Background(), path, Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}
