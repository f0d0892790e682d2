package registry

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
)

// layoutSteps writes the versions of testdata/grouped-v3.db.gz: a seed of
// 600 entries, an alias edit, a change of three entries (one new, one
// re-described, one given a new identity) and a second alias edit. The
// clock is mustOpen's, so the bytes are the same on every run.
func layoutSteps(t *testing.T, s *Store) {
	t.Helper()
	es := synthEntries(t, 600)
	mustSeed(t, s, es)
	e := es[7].Clone()
	e.Disc.Aliases = append(e.Disc.Aliases, "first layout alias")
	mustPut(t, s, e)
	a, b, c := es[100].Clone(), es[200].Clone(), synthEntries(t, 601)[600]
	a.Disc.Description += " Re-described."
	b.Impl.Expr = "(seq " + b.Impl.Expr + " (const -1))"
	if _, _, err := s.Apply(context.Background(), []Entry{a, b, c}); err != nil {
		t.Fatal(err)
	}
	e.Disc.Aliases = append(e.Disc.Aliases, "second layout alias")
	mustPut(t, s, e)
}

// layoutDump is every registry.* bucket of the file at path, one line per
// bucket: its name, its key count and the SHA-256 of its keys and values
// in order. Two files with the same dump hold the same bytes.
func layoutDump(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var lines []string
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if !strings.HasPrefix(string(name), "registry.") {
				return nil
			}
			var all bytes.Buffer
			n := 0
			err := b.ForEach(func(k, v []byte) error {
				n++
				fmt.Fprintf(&all, "%d:%s%d:%s", len(k), k, len(v), v)
				return nil
			})
			lines = append(lines, fmt.Sprintf("%s %d %s", name, n, hashing.SumSHA256(all.Bytes())))
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

// The registry writes the bytes it always has: the same steps give, bucket
// by bucket, the same keys and values as testdata/grouped-v3.layout, made
// by the code before the registry moved onto package store; and the file
// that code wrote (testdata/grouped-v3.db.gz) opens, verifies and answers
// as it did then (testdata/grouped-v3.golden.json).
func TestLayoutBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "layout.db")
	s := mustOpen(t, path)
	layoutSteps(t, s)
	s.Close()
	got := layoutDump(t, path)
	if *update {
		writeLayoutFixture(t, path, got)
	}
	want, err := os.ReadFile("testdata/grouped-v3.layout")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the steps wrote other bytes:\n got %s\nwant %s", got, want)
	}

	ctx := context.Background()
	old, g := goldenDB(t, "grouped-v3")
	if got := layoutDump(t, old); got != string(want) {
		t.Errorf("the fixture's buckets:\n got %s\nwant %s", got, want)
	}
	rep, err := VerifyFile(ctx, old)
	if err != nil || rep.Versions != 4 || rep.Current != 4 || rep.Registry != g.Versions[3].Registry {
		t.Fatalf("verify the fixture: %+v, %v", rep, err)
	}
	for _, ro := range []bool{true, false} {
		s, err := Open(ctx, old, Options{ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		checkLegacyVersions(t, s, g)
		s.Close()
	}
	if got := layoutDump(t, old); got != string(want) {
		t.Errorf("opening the fixture changed it:\n got %s\nwant %s", got, want)
	}
}

// writeLayoutFixture rewrites testdata/grouped-v3.*: run with -update only
// on the code whose bytes are the reference.
func writeLayoutFixture(t *testing.T, path, dump string) {
	t.Helper()
	if err := os.WriteFile("testdata/grouped-v3.layout", []byte(dump), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("testdata/grouped-v3.db.gz", gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var g legacyGolden
	if g.History, err = s.History(ctx); err != nil {
		t.Fatal(err)
	}
	for v := uint64(1); v <= s.Current().Version(); v++ {
		snap, err := s.Version(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(snap.Export())
		g.Versions = append(g.Versions, struct {
			Version  uint64         `json:"version"`
			Registry hashing.Digest `json:"registry"`
			Count    int            `json:"count"`
			Export   hashing.Digest `json:"export"`
		}{v, snap.Registry(), len(snap.Capabilities()), hashing.SumSHA256(b)})
	}
	out, _ := json.MarshalIndent(g, "", "  ")
	if err := os.WriteFile("testdata/grouped-v3.golden.json", append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
