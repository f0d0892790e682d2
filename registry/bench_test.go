package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/store/boltstore"
)

// synthEntries returns n entries with distinct behaviour, shaped like the
// built-in catalog's (each is a catalog entry renamed, with its expression
// wrapped so that its identity is its own).
func synthEntries(tb testing.TB, n int) []Entry {
	tb.Helper()
	cat, err := BuiltinCatalog()
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]Entry, n)
	for i := range out {
		e := cat[i%len(cat)].Clone()
		e.Name = fmt.Sprintf("SYN_%06d", i)
		e.Impl.Expr = fmt.Sprintf("(seq %s (const %d))", e.Impl.Expr, i)
		out[i] = e
	}
	return out
}

// usedBytes is the size of the database as bbolt sees it (its high-water
// page), which, unlike the file size, does not move in preallocated steps.
func usedBytes(tb testing.TB, s *Store) int64 {
	tb.Helper()
	var n int64
	if err := s.DB().View(func(tx *bolt.Tx) error { n = tx.Size(); return nil }); err != nil {
		tb.Fatal(err)
	}
	return n
}

// aliasEdit adds a distinct alias to entry name and commits it.
func aliasEdit(tb testing.TB, s *Store, name string, i int) {
	tb.Helper()
	c, ok := s.Current().Get(name)
	if !ok {
		tb.Fatalf("no %s", name)
	}
	c.Disc.Aliases = append(c.Disc.Aliases, fmt.Sprintf("edit alias %d", i))
	if _, err := s.Put(context.Background(), c.Entry); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkRegistry100k is the cost of one alias edit on a registry of
// 100,000 entries: commit time (ns/op, and the median as median-ms) and
// how much the file grows per edit (bytes/edit). The last sub-benchmark
// reads an old version. Run with
//
//	go test ./registry -run '^$' -bench Registry100k -benchtime 50x
func BenchmarkRegistry100k(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "registry.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	if _, err := s.Seed(ctx, synthEntries(b, n)); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d entries in %v, %d MB", n, time.Since(began).Round(time.Millisecond), usedBytes(b, s)>>20)

	edits := 0
	b.Run("alias-edit", func(b *testing.B) {
		before := usedBytes(b, s)
		times := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			name := fmt.Sprintf("SYN_%06d", (edits*7919)%n)
			t0 := time.Now()
			aliasEdit(b, s, name, edits)
			times = append(times, time.Since(t0))
			edits++
		}
		b.StopTimer()
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms")
		b.ReportMetric(float64(usedBytes(b, s)-before)/float64(b.N), "bytes/edit")
	})
	b.Run("read-version-1", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			snap, err := s.Version(ctx, 1)
			if err != nil || len(snap.Capabilities()) != n {
				b.Fatal(err)
			}
		}
	})
	b.Run("read-version-1-cold", func(b *testing.B) {
		// As a process that just opened the file would, before any
		// snapshot is in memory: every chunk and record decoded.
		for i := 0; i < b.N; i++ {
			err := s.DB().View(func(tx *bolt.Tx) error {
				_, err := readVersion(ctx, boltstore.Tx(tx), 1, nil)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	if fi, err := os.Stat(path); err == nil {
		b.Logf("file %d MB after %d edits", fi.Size()>>20, edits)
	}
	s.Close()
	// Once each, logged (-v): these read everything.
	t0 := time.Now()
	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	ro.Close()
	t1 := time.Now()
	rep, err := VerifyFile(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("open %v; verify %v (%d versions, %d records, %d chunks)", t1.Sub(t0).Round(time.Millisecond),
		time.Since(t1).Round(time.Millisecond), rep.Versions, rep.Records, rep.Chunks)
}

// BenchmarkVerify300Edits is `registry verify` on the built-in catalog
// after 300 single-alias edits.
func BenchmarkVerify300Edits(b *testing.B) {
	cat, err := BuiltinCatalog()
	if err != nil {
		b.Fatal(err)
	}
	s, path := mustOpenStore(b)
	mustSeed(b, s, cat)
	for i := 0; i < 300; i++ {
		aliasEdit(b, s, cat[i%len(cat)].Name, i)
	}
	s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := VerifyFile(context.Background(), path)
		if err != nil || rep.Versions != 301 {
			b.Fatal(rep, err)
		}
	}
}
