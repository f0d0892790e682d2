package registry

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkOpen is the cost of opening a seeded registry of the built-in
// catalog, as every command does.
func BenchmarkOpen(b *testing.B) {
	cat, err := BuiltinCatalog()
	if err != nil {
		b.Fatal(err)
	}
	s, path := mustOpenStore(b)
	mustSeed(b, s, cat)
	s.Close()
	benchOpen(b, path)
}

// BenchmarkOpen100k is the cost of opening a registry of 100,000 entries
// (a server's start): time, and the heap the open snapshot keeps
// (heap-MB, measured after a collection with the store open). Run with
//
//	go test ./registry -run '^$' -bench Open100k -benchtime 5x
func BenchmarkOpen100k(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "registry.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Seed(ctx, synthEntries(b, 100_000)); err != nil {
		b.Fatal(err)
	}
	s.Close()
	benchOpen(b, path)
}

func benchOpen(b *testing.B, path string) {
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var open, closed uint64
	for i := 0; i < b.N; i++ {
		s, err := Open(context.Background(), path, Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		if i == b.N-1 {
			b.StopTimer()
			open = heap()
			runtime.KeepAlive(s.Current())
			b.StartTimer()
		}
		s.Close()
	}
	b.StopTimer()
	closed = heap()
	b.ReportMetric(float64(open-min(open, closed))/(1<<20), "heap-MB")
}
