package registry

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
)

// BenchmarkBulkPut100k is `groundgate registry put` of one file of
// 100,000 entries on a new database, as the command does it: open, seed
// the built-in catalog, decode the file strictly, apply it as one version.
// Run with
//
//	go test ./registry -run '^$' -bench BulkPut100k -benchtime 1x -cpuprofile cpu.out
func BenchmarkBulkPut100k(b *testing.B) {
	ctx := context.Background()
	data, err := json.Marshal(synthEntries(b, 100_000))
	if err != nil {
		b.Fatal(err)
	}
	cat, err := BuiltinCatalog()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := Open(ctx, filepath.Join(b.TempDir(), "registry.db"), Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Seed(ctx, cat); err != nil {
			b.Fatal(err)
		}
		entries, err := DecodeEntries(data, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Apply(ctx, entries); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
